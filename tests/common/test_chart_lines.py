"""A line trace draws every point it has: a point with no neighbour to be joined to gets a
dot, since Plotly's "lines" mode leaves it undrawn (a port's first rollup on the node page
looked like empty axes)."""

from __future__ import annotations

from apps.common.charts import line_style


def test_joined_points_are_a_line_alone() -> None:
    assert line_style([1.0, 2.0, 3.0], "#123456") == {"mode": "lines"}
    assert line_style([], "#123456") == {"mode": "lines"}
    assert line_style([None, 1.0, 2.0, None, 3.0, 4.0], "#123456") == {"mode": "lines"}


def test_a_lone_point_is_a_dot_of_the_line_colour() -> None:
    assert line_style([5.0], "#123456") == {
        "mode": "lines+markers",
        "marker": {"color": "#123456", "size": [6]},
    }
    # between gaps, and at either end beside a gap: only those points get a dot
    style = line_style([1.0, None, 2.0, 3.0, None, 4.0, None], "#abcdef")
    assert style["marker"]["size"] == [6, 0, 0, 0, 0, 6, 0]
    assert line_style([None, None], "#abcdef") == {"mode": "lines"}
