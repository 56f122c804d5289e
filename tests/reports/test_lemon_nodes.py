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
    failed(60, [nodes[0]], planned=True)  # planned: not a failure
    failed(70, [nodes[2]], interrupts=False)  # stopped nothing
    failed(-5, [nodes[2]])  # before the window
    failed(20, [far], where=other)  # another cluster's
    lemons = lemon_nodes(cluster=cluster, start=start, end=now, now=now)
    assert [(n["hostname"], n["failures"]) for n in lemons] == [("gpu000", 2), ("gpu001", 1)]
    assert lemons[0]["days"] == pytest.approx(7.0)
    assert lemons[0]["per_node_day"] == pytest.approx(2 / 7)
    assert lemons[0]["rack"] == "r0" and lemons[0]["state"] == nodes[0].state
    assert lemon_nodes(cluster=other, start=start, end=now, now=now)[0]["failures"] == 1
