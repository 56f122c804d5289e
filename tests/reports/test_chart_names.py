"""Names people choose (job names) reach charts as text: Plotly renders a subset of HTML in
legends and axis labels, so a job named like a link must not become one."""

from __future__ import annotations

from types import SimpleNamespace

from apps.common.charts import plain
from apps.reports.weekly_charts import checkpoint_cost_figure, mfu_figure

EVIL = '<a href="https://evil.example/">click</a> & <b>co</b>'


def test_plain_escapes_markup():
    assert plain(EVIL) == (
        '&lt;a href="https://evil.example/"&gt;click&lt;/a&gt; &amp; &lt;b&gt;co&lt;/b&gt;'
    )


def test_job_names_are_text_in_the_mfu_legend_and_checkpoint_axis():
    series = {
        "hours": [0.0],
        "cluster": [0.4],
        "jobs": [{"id": 1, "name": EVIL, "gpu_count": 8, "mfu": [0.4]}],
    }
    legend = [t["name"] for t in mfu_figure(series, 0.5)["data"]]
    advice = SimpleNamespace(gpu_hours_saved_per_week=1.0)
    rows = [{"name": EVIL, "checkpoint_gpu_hours_7d": 2.0, "advice": advice}]
    axis = checkpoint_cost_figure(rows)["data"][0]["x"]
    for text in [*legend, *axis]:
        assert "<" not in text and ">" not in text
    assert any("&lt;a href" in text for text in legend) and "&lt;b&gt;" in axis[0]


def test_a_job_name_never_enters_the_mfu_hover_template():
    """A template reads HTML and `%{…}` variables: a job named `%{y}` or like a link must
    fill the hover as text (the trace's escaped name), never be part of the template."""
    name = EVIL + " %{y} %{x}"
    series = {
        "hours": [0.0],
        "cluster": [0.4],
        "jobs": [{"id": 1, "name": name, "gpu_count": 8, "mfu": [0.4]}],
    }
    job_trace = mfu_figure(series, 0.5)["data"][1]
    assert "evil" not in job_trace["hovertemplate"] and "%{x}" not in job_trace["hovertemplate"]
    assert job_trace["hovertemplate"] == "%{y:.1%}<extra>%{fullData.name}</extra>"
    assert "&lt;a href" in job_trace["name"] and "<" not in job_trace["name"]
