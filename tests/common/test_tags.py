"""The node-rack tag's links: the same markup the grids had, every value escaped."""

from __future__ import annotations

from types import SimpleNamespace as T

from apps.common.templatetags.kuae import node_rack, tile_words
from tests.support import grid_tiles


def test_overview_tiles_escape_and_mark_busy():
    html = node_rack([T(hostname="r0n1", state="drained", reason='<b>"GEMM"</b>', busy=True)])
    assert html == (
        '<div class="rack"><a class="tile state-drained busy" href="/nodes/r0n1/" '
        'title="r0n1 · Drained · &lt;b&gt;&quot;GEMM&quot;&lt;/b&gt; · in a job">−</a></div>'
    )


def test_health_tiles_show_the_worst_result():
    tiles = [
        T(hostname="a", state="healthy", worst="fail", why="sdc: checksum differs"),
        T(hostname="b", state="suspect", worst="warn", why="thermal: 87 °C"),
        T(hostname="c", state="healthy", worst="pass", why=""),
    ]
    html = node_rack(tiles, busy=True)
    assert '<a class="tile state-healthy busy worst-fail" href="/nodes/a/" ' in html
    assert 'title="a · Healthy · fail: sdc: checksum differs">!</a>' in html
    assert 'class="tile state-suspect busy worst-warn"' in html and ">?</a>" in html
    assert 'data-hosts="a,b,c" data-tiles="!!+"' in html  # c: drawn by the page's script
    (c,) = [t for t in grid_tiles(tile_words() + html) if t.drawn]
    assert (c.host, c.classes, c.title, c.href) == (
        "c",
        "tile state-healthy busy",
        "c · Healthy",
        "/nodes/c/",
    )
