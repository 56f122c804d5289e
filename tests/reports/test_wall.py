"""The node grid's shape on a wall screen (apps/reports/wall.py): racks in balanced rows, the
whole grid within its share of the screen's height, tiles a room can read."""

from __future__ import annotations

import math

import pytest

from apps.reports.wall import HEIGHT, tile_px, wall_grid


@pytest.mark.parametrize("racks", range(1, 101))
def test_no_rack_wraps_alone_and_the_tiles_stay_readable(racks):
    # up to 80 racks (10,240 GPUs) tiles of 20 px or more; beyond, smaller rather than a scroll
    g = wall_grid([16] * racks)
    assert g.rows == math.ceil(racks / g.per_row)
    last = racks - (g.rows - 1) * g.per_row
    assert g.rows == 1 or 2 * last >= g.per_row  # the last row at least half full
    assert tile_px(g.per_row, g.rows, g.rack_rows, g.grid_vh) >= (20 if racks <= 80 else 12)
    assert g.grid_vh * HEIGHT / 100 <= 0.6 * HEIGHT  # the tables keep the rest


def test_the_demo_racks_sit_four_and_four():
    # eight racks of sixteen (the demo's 1,024 GPUs): two rows of four large tiles, not
    # seven and one
    g = wall_grid([16] * 8)
    assert (g.per_row, g.rows, g.rack_rows) == (4, 2, 2)
    assert "--per-row: 4" in g.style and "--grid-h: 34vh" in g.style


def test_tall_racks_count_their_rows():
    assert wall_grid([40, 12]).rack_rows == 5
    assert wall_grid([]).per_row == 1
