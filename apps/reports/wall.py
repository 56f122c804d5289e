"""How the overview's racks sit on a wall screen (`?kiosk=1`, docs/pages.md, Every screen
size): how many racks a row holds and how much of the screen's height the node grid may take,
so that the whole page fits the screen (nobody scrolls a wall) and no rack wraps alone.

The browser sizes the tiles from the viewport (`static/css/app.css`, `body.kiosk .grid`):
the largest tile (up to 64 px) at which `per_row` racks fit the width and `rows` rows of
racks fit `grid_vh` of the height. This module picks `per_row` and `grid_vh` for a 16:9
wall (2560 × 1440; a 1920 × 1080 one is the same picture, smaller) with the same
arithmetic, so the page's layout does not move when its data refreshes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# The reference wall and the stylesheet's measures on it (text 0.9% of the width: 23 px).
WIDTH, HEIGHT, EM = 2560, 1440, 23.04
TILES_ACROSS = 8  # a rack is drawn eight tiles wide
TILE_GAP = 3  # px between two tiles of a rack
RACKS_WIDTH = WIDTH - 4.8 * EM - 26  # main's padding, the card's padding and border
RACK_GAP_X, RACK_GAP_Y, RACK_LABEL = EM, 0.8 * EM, 1.1 * EM
SMALLEST, LARGEST = 24, 64  # tile sizes, px
# Tiles this large read from across the room: past it, fewer rows of racks (more room for the
# tables below) beat larger tiles.
COMFORTABLE = 48
# The share of the screen's height the grid may take: the least that gives tiles of at least
# SMALLEST px, so the running jobs and the latest incidents keep the rest.
GRID_VH = (34, 40, 46, 52, 58)


@dataclass(frozen=True)
class WallGrid:
    """The node grid's shape on a wall screen."""

    per_row: int  # racks side by side
    rows: int  # rows of racks
    rack_rows: int  # tiles down one rack (its nodes, eight a row)
    grid_vh: int  # the grid's share of the screen's height, %

    @property
    def style(self) -> str:
        """The custom properties `body.kiosk .grid` reads."""
        return (
            f"--per-row: {self.per_row}; --rows: {self.rows}; "
            f"--rack-rows: {self.rack_rows}; --grid-h: {self.grid_vh}vh"
        )


def tile_px(per_row: int, rows: int, rack_rows: int, grid_vh: int) -> float:
    """The tile (px) at which `per_row` racks fit the reference wall's width and `rows`
    rows of them its `grid_vh` — the stylesheet's formula, before it clamps to 12…64 px."""
    across = (
        RACKS_WIDTH - (per_row - 1) * RACK_GAP_X - per_row * (TILES_ACROSS - 1) * TILE_GAP
    ) / (per_row * TILES_ACROSS)
    height = HEIGHT * grid_vh / 100
    down = (
        height - rows * RACK_LABEL - (rows - 1) * RACK_GAP_Y - rows * (rack_rows - 1) * TILE_GAP
    ) / (rows * rack_rows)
    return min(across, down)


def balanced(racks: int, per_row: int) -> bool:
    """Whether the last row of racks is at least half full (no rack wraps alone)."""
    last = racks - (math.ceil(racks / per_row) - 1) * per_row
    return racks <= per_row or 2 * last >= per_row


def wall_grid(rack_sizes: list[int]) -> WallGrid:
    """The grid's shape for racks of these many nodes: the largest tiles (whole px, up to
    COMFORTABLE) in the least height, then the fewest rows, then the largest tiles; every
    row but the last full and the last at least half full."""
    n = max(len(rack_sizes), 1)
    rack_rows = max(1, math.ceil(max(rack_sizes, default=1) / TILES_ACROSS))
    best: tuple[tuple[float, int, int], WallGrid] | None = None
    for grid_vh in GRID_VH:
        for per_row in range(1, n + 1):
            if not balanced(n, per_row):
                continue
            rows = math.ceil(n / per_row)
            tile = math.floor(min(tile_px(per_row, rows, rack_rows, grid_vh), LARGEST))
            key = (min(tile, COMFORTABLE), -rows, tile)
            if best is None or key > best[0]:
                best = (key, WallGrid(per_row, rows, rack_rows, grid_vh))
        if best is not None and best[0][0] >= SMALLEST:
            break  # the least height that gives tiles a room can read
    assert best is not None  # per_row = n is always balanced
    return best[1]
