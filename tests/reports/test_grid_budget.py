"""The node grids' pages keep their byte budget at fleet scale (docs/pages.md, Node grids):
at 12,800 nodes (102,400 GPUs) the overview, Health and Topology are each at most 300 kB of
HTML. Measured at two sizes (the fleet of tests/bench/grid_pages.py: one node in a hundred
out of service, one in a hundred with a check warning or failing, a job on three quarters),
each page's bytes a node and its size at 12,800 nodes extrapolated from them."""

from __future__ import annotations

import pytest

from tests.bench.grid_pages import fleet_build
from tests.support import grid_tiles, topology_components

pytestmark = pytest.mark.django_db

SMALL, LARGE, TARGET = 256, 2048, 12_800
BUDGET = 300_000  # bytes of HTML a page at TARGET nodes
PAGES = ("/?cluster={}", "/health/?cluster={}", "/topology/?cluster={}")


def test_the_grid_pages_stay_within_300_kB_at_12800_nodes(client, users):
    fleet_build(SMALL, name="small", prefix="s")
    fleet_build(LARGE, name="large", prefix="l")
    client.force_login(users["mia"])
    for page in PAGES:
        small = client.get(page.format("small")).content.decode()
        large = client.get(page.format("large")).content.decode()
        per_node = (len(large.encode()) - len(small.encode())) / (LARGE - SMALL)
        at_target = len(large.encode()) + (TARGET - LARGE) * per_node
        print(page, f"{per_node:.1f} bytes a node, {at_target / 1000:.0f} kB at {TARGET:,}")
        assert at_target <= BUDGET, (page, round(per_node, 1), round(at_target))
        assert per_node < 25, page  # a plain tile is a few bytes, not a link
        if "topology" in page:  # each node behind a switch, a PDU and a domain
            assert len(topology_components(large)) == LARGE // 16 * 5
        else:  # every node, as an operator sees it, the troubled ones sent as links
            tiles = grid_tiles(large)
            assert len({t.host for t in tiles}) == len(tiles) == LARGE
            sent = [t for t in tiles if not t.drawn]
            assert sent and all(
                "state-healthy" not in t.classes or "worst-" in t.classes for t in sent
            )
