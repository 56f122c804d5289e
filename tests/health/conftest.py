"""A 16-node cluster with a running job on the first four nodes, everyone heartbeating."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.fleet.models import Node
from apps.fleet.services import NodeSpec, nodes_register
from apps.jobs.services import job_create


@pytest.fixture
def fleet(cluster, api):  # noqa: ANN001, ANN201
    start = timezone.now() - dt.timedelta(days=10)
    nodes = nodes_register(
        cluster=cluster,
        specs=[
            NodeSpec(hostname=f"h{i:02d}", rack=f"r{i // 8}", in_service_at=start)
            for i in range(16)
        ],
    )
    job, _ = job_create(
        cluster=cluster,
        nodes=nodes[:4],
        name="train-70b",
        n_params=70e9,
        gpu_count=32,
        status="running",
        started_at=timezone.now() - dt.timedelta(hours=5),
    )
    agent = api("ada")
    for node in nodes:
        assert (
            agent.post(f"/api/v1/nodes/{node.hostname}/heartbeat/", {}, format="json").status_code
            == 204
        )
    return {"nodes": nodes, "job": job, "agent": agent}


def backdate(hostname: str, seconds: float) -> dt.datetime:
    """As if the node went quiet `seconds` ago (the intake stamps receive time)."""
    when = timezone.now() - dt.timedelta(seconds=seconds)
    Node.objects.filter(hostname=hostname).update(last_seen_at=when, last_heartbeat_at=when)
    return when
