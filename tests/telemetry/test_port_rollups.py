"""Each node's 5-minute port rollup, written by the ports intake (docs/integrations.md, NIC
ports): the counters' growth summed over its ports (a reset counts its new value), ports
that reported and ports not ACTIVE, merged by the database across batches, one upsert per
batch whatever its size, pruned with the GPU rollups."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.telemetry.models import PortRollup
from apps.telemetry.rollup import bucket_of
from apps.telemetry.services import rollups_prune
from tests.telemetry.test_ports import T0, post, reading

pytestmark = pytest.mark.django_db
B0 = bucket_of(T0) - dt.timedelta(minutes=10)


def at(minutes: float) -> dt.datetime:
    return B0 + dt.timedelta(minutes=minutes)


def test_growth_is_summed_over_a_nodes_ports_per_bucket(api, nodes):
    ada = api("ada")
    first = [
        reading("gpu000", "mlx5_0", at=at(0), state="ACTIVE", symbol_error=10, link_downed=1),
        reading("gpu000", "mlx5_1", at=at(0), state="ACTIVE", symbol_error=0, link_downed=0),
        reading("gpu001", "mlx5_0", at=at(0), state="ACTIVE", symbol_error=0),
    ]
    assert post(ada, ports=first).status_code == 202
    (r0, r1) = PortRollup.objects.filter(bucket=B0).order_by("node__hostname")
    # a port's first reading grew nothing yet, but it reported
    assert (r0.symbol_error, r0.ports, r0.not_active, r1.ports) == (0, 2, 0, 1)
    later = [
        reading("gpu000", "mlx5_0", at=at(1), state="ACTIVE", symbol_error=25, link_downed=1),
        reading("gpu000", "mlx5_1", at=at(1), state="DOWN", symbol_error=4, link_downed=2),
        reading("gpu000", "mlx5_0", at=at(6), state="ACTIVE", symbol_error=3),  # reset
    ]
    assert post(ada, ports=later).status_code == 202
    row = PortRollup.objects.get(node__hostname="gpu000", bucket=B0)
    assert (row.symbol_error, row.link_downed) == (15 + 4, 0 + 2)
    assert (row.ports, row.not_active) == (2, 1)
    nxt = PortRollup.objects.get(node__hostname="gpu000", bucket=B0 + dt.timedelta(minutes=5))
    assert (nxt.symbol_error, nxt.ports, nxt.not_active) == (3, 1, 0)  # the reset's new value
    # a re-post is stale: nothing is counted twice
    assert post(ada, ports=later).json()["ports_stale"] == 3
    row.refresh_from_db()
    assert (row.symbol_error, row.link_downed, row.ports) == (19, 2, 2)


def test_one_upsert_per_batch_whatever_its_ports(api, cluster):
    from apps.fleet.services import NodeSpec, nodes_register

    nodes_register(cluster=cluster, specs=[NodeSpec(hostname=f"n{i:03d}") for i in range(40)])
    ada = api("ada")

    def sweep(hosts: int, minute: float, value: int) -> int:
        ports = [
            reading(f"n{i:03d}", f"mlx5_{p}", at=at(minute), state="ACTIVE", symbol_error=value)
            for i in range(hosts)
            for p in range(8)
        ]
        with CaptureQueriesContext(connection) as queries:
            assert post(ada, ports=ports).status_code == 202
        return len(queries)

    sweep(40, 0, 0)
    small, large = sweep(2, 1, 5), sweep(40, 2, 9)
    assert small == large
    assert PortRollup.objects.get(node__hostname="n000", bucket=B0).symbol_error == 8 * 9
    assert PortRollup.objects.get(node__hostname="n039", bucket=B0).symbol_error == 8 * 9


def test_port_rollups_are_pruned_with_the_gpu_rollups(api, nodes):
    ada = api("ada")
    assert post(ada, ports=[reading("gpu000", at=at(0))]).status_code == 202
    assert PortRollup.objects.count() == 1
    rollups_prune(older_than_days=1, now=B0 + dt.timedelta(days=2))
    assert PortRollup.objects.count() == 0
