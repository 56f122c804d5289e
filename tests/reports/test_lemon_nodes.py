"""The reliability page's lemon nodes (reports.selectors.lemon_nodes): which incidents count
for a node, and the ranking by failures then failures per node-day in service."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.fleet.services import NodeSpec, cluster_create, nodes_register
from apps.incidents.services import incident_open
from apps.reports.selectors import lemon_nodes

pytestmark = pytest.mark.django_db


def test_lemon_nodes_count_interrupting_unplanned_incidents_in_the_window(cluster, nodes):
    now = timezone.now().replace(microsecond=0)
    start = now - dt.timedelta(days=7)
    other = cluster_create(name="c2", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8)
    (far,) = nodes_register(cluster=other, specs=[NodeSpec(hostname="far001")])

    def failed(hours_in: float, on, *, interrupts=True, planned=False, where=cluster) -> None:  # noqa: ANN001
        at = start + dt.timedelta(hours=hours_in)
        incident_open(
            cluster=where,
            title="x",
            category="host_maintenance" if planned else "gpu",
            severity="sev2",
            detected_at=at,
            nodes=on,
            interrupts_job=interrupts,
            planned=planned,
        )

    failed(10, [nodes[0], nodes[1]])  # one incident on two nodes: one failure each
    failed(50, [nodes[0]])
    failed(55, [nodes[0]])
    failed(60, [nodes[0]], planned=True)  # planned: not a failure
    failed(30, [nodes[1]])  # gpu001: two failures, not a lemon
    for hours in (70, 80, 90):
        failed(hours, [nodes[2]], interrupts=False)  # stopped nothing
    failed(-5, [nodes[2]])  # before the window
    failed(-4, [nodes[2]])
    failed(75, [nodes[2]])  # gpu002: one failure in the window
    for hours in (20, 21, 22):
        failed(hours, [far], where=other)  # another cluster's
    lemons = lemon_nodes(cluster=cluster, start=start, end=now, now=now)
    assert [(n["hostname"], n["failures"]) for n in lemons] == [("gpu000", 3)]
    assert lemons[0]["days"] == pytest.approx(7.0)
    assert lemons[0]["per_node_day"] == pytest.approx(3 / 7)
    assert lemons[0]["rack"] == "r0" and lemons[0]["state"] == nodes[0].state
    assert lemon_nodes(cluster=other, start=start, end=now, now=now)[0]["failures"] == 3


def test_one_or_two_failures_do_not_make_a_lemon(cluster, nodes, client, users):
    """docs/formulas.md, Reliability: MTBF at three levels: at least 3 unexpected ones."""
    now = timezone.now()
    for i, count in enumerate((1, 2, 3, 4)):
        for k in range(count):
            incident_open(
                cluster=cluster,
                title="x",
                category="gpu",
                severity="sev2",
                detected_at=now - dt.timedelta(days=2, hours=i * 10 + k),
                nodes=[nodes[i]],
                interrupts_job=True,
            )
    lemons = lemon_nodes(cluster=cluster, start=now - dt.timedelta(days=30), end=now, now=now)
    assert [(n["hostname"], n["failures"]) for n in lemons] == [("gpu003", 4), ("gpu002", 3)]
    client.force_login(users["mia"])
    html = client.get("/reliability/?days=30").content.decode()
    table = html[html.index('id="lemon-h"') : html.index("</section>", html.index('id="lemon-h"'))]
    assert "nodes with 3 or more unexpected interruptions" in table
    assert 'href="/nodes/gpu003/"' in table and 'href="/nodes/gpu002/"' in table
    assert 'href="/nodes/gpu001/"' not in table and 'href="/nodes/gpu000/"' not in table
