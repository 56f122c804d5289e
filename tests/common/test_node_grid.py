"""The node grids' compact racks (docs/pages.md, Node grids): hostlists that expand back to
the same names in the same order, runs, and the rack tag's links and data."""

from __future__ import annotations

from types import SimpleNamespace as T

import pytest

from apps.common.hostnames import Hostlists
from apps.common.node_grid import hostlist, plain, runs
from apps.common.templatetags.kuae import node_rack, tile_words
from tests.support import grid_tiles


@pytest.mark.parametrize(
    "names",
    [
        [f"r001n{i:02d}" for i in range(16)],
        ["n8", "n9", "n10", "n11", "login", "a1b2", "a1b3", "gpu01.x.com", "gpu02.x.com", "007"],
        ["r1n03", "r1n01", "r1n02"],  # out of order: kept as given
        [f"gpu{i}" for i in (1, 2, 3, 5, 7, 8, 9, 100)],
        ["only"],
    ],
)
def test_a_hostlist_expands_back_to_the_names_in_order(names):
    compact = hostlist(names)
    assert compact is not None and Hostlists().expand(compact) == names


def test_a_rack_of_sixteen_is_one_bracket_and_unsafe_names_make_none():
    assert hostlist([f"r001n{i:02d}" for i in range(16)]) == "r001n[00-15]"
    assert hostlist(["a,b"]) is None and hostlist(["a[1]"]) is None and hostlist(["x", ""]) is None


def test_runs_of_three_or_more_are_counted():
    assert runs("..+++!..!" + "." * 13) == "..3+!..!13."


def test_a_tile_is_plain_only_when_healthy_with_nothing_to_say():
    assert plain(T(hostname="a", state="healthy", reason=""))
    assert not plain(T(hostname="a", state="healthy", reason="repair verified"))
    assert not plain(T(hostname="a", state="drained", reason=""))
    assert not plain(T(hostname="a", state="healthy", worst="warn", why="thermal: 85 °C"))


def test_the_rack_sends_tiles_needing_attention_as_links_and_the_rest_as_data():
    tiles = [T(hostname=f"r7n{i:02d}", state="healthy", reason="", busy=i < 8) for i in range(16)]
    tiles[5] = T(hostname="r7n05", state="down", reason="<b>no answer</b>", busy=True)
    html = node_rack(tiles, "r7")
    assert html.startswith('<div class="rack" data-hosts="r7n[00-15]" data-tiles="5+!++8.">')
    assert '<span class="rack-name">r7</span>' in html
    assert html.count("<a ") == 1 and "&lt;b&gt;no answer&lt;/b&gt;" in html
    words = tile_words(in_a_job=True)  # the overview's
    seen = grid_tiles(words + html)
    assert [t.host for t in seen] == [t.hostname for t in tiles]
    assert (
        seen[0].title == "r7n00 · Healthy · in a job"
        and seen[0].classes == "tile state-healthy busy"
    )
    assert seen[5].classes == "tile state-down busy" and not seen[5].drawn
    assert seen[9].title == "r7n09 · Healthy" and seen[9].href == "/nodes/r7n09/"


def test_a_rack_with_nothing_plain_or_no_hostlist_is_sent_whole():
    bad = [T(hostname=f"n{i}", state="drained", reason="x") for i in range(3)]
    assert "data-hosts" not in node_rack(bad) and node_rack(bad).count("<a ") == 3
    odd = [T(hostname="a,b", state="healthy", reason="")]
    assert "data-hosts" not in node_rack(odd) and node_rack(odd).count("<a ") == 1
