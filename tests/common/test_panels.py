"""The panel registry (`apps/common/panels.py`): a page shows what apps above its own lend
it at start-up, in order, and a panel with nothing to show is left out."""

from __future__ import annotations

import pytest

from apps.common import panels

pytestmark = pytest.mark.django_db


def test_the_apps_above_lend_their_panels_at_start_up():
    lent = {slot: [p.template for p in ps] for slot, ps in panels._lent.items()}
    assert lent == {
        panels.NODE: ["maintenance/_node_windows.html", "repairs/_node_repair.html"],
        # Telemetry's GPU table, NIC ports, host readings and charts, with the health
        # checks' results between them.
        panels.NODE_BODY: [
            "telemetry/_node_gpus.html",
            "telemetry/_node_ports.html",
            "telemetry/_node_host.html",
            "health/_node_checks.html",
            "telemetry/_node_charts.html",
        ],
        panels.NODE_FOOT: ["telemetry/_node_events.html"],
        panels.NODE_FACTS: ["scheduler/_node_fact.html"],
        panels.NODE_BELOW: ["scheduler/_node_actuations.html"],
        # The job page: the effective rate and the incidents after its chart, the nodes
        # ranked by suspicion after its ranks.
        panels.JOB: ["reports/_job_effective_card.html", "incidents/_job_incidents_card.html"],
        panels.JOB_BELOW: ["health/_job_suspects_card.html"],
        panels.OVERVIEW: ["maintenance/_overview_windows.html"],
        panels.RELIABILITY: ["repairs/_offenders.html"],
    }


def test_panels_render_in_order_and_one_with_nothing_to_show_is_left_out(monkeypatch, nodes):
    monkeypatch.setitem(panels._lent, panels.NODE, [])
    panels.lend(slot=panels.NODE, template="repairs/_node_repair.html", context=lambda node: None)
    panels.lend(
        slot=panels.NODE,
        template="maintenance/_node_windows.html",
        context=lambda node: {"windows": [], "now": None, "node": node},
        order=5,
    )
    assert panels.render(slot=panels.NODE, node=nodes[0]) == []  # nothing to show: nothing
    panels.lend(  # lending a template again replaces it
        slot=panels.NODE,
        template="repairs/_node_repair.html",
        context=lambda node: {"opening": None, "offender": True, "recent": 3, "days": 30},
        order=1,
    )
    assert [p.order for p in panels._lent[panels.NODE]] == [1, 5]
    (html,) = panels.render(slot=panels.NODE, node=nodes[0])
    assert "data-repeat-offender" in html and "3 repairs in the last 30 days" in html


def test_a_wrong_slot_or_subject_fails_loudly(nodes):
    with pytest.raises(ValueError, match="no panel slot 'nodes'"):
        panels.lend(slot="nodes", template="x.html", context=lambda node: {})
    with pytest.raises(TypeError, match="is given node"):
        panels.render(slot=panels.NODE, cluster=nodes[0].cluster)


def test_the_node_body_hands_its_panels_the_pages_query(nodes):
    """The charts' range comes from the node page's query; the panels that need none are
    given it all the same."""
    html = "".join(panels.render(slot=panels.NODE_BODY, node=nodes[0], params={"range": "7d"}))
    assert html.index('aria-labelledby="gpu-h"') < html.index('aria-labelledby="chk-h"')
    assert html.index('aria-labelledby="chk-h"') < html.index('aria-labelledby="tel-h"')
    assert 'aria-current="true">7 d<' in html and "gpus.json?range=7d" in html
    with pytest.raises(TypeError, match="is given node, params"):
        panels.render(slot=panels.NODE_BODY, node=nodes[0])
