"""Twelve nodes in three racks, a running job on the first four, everyone heartbeating."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.utils import timezone

from apps.fleet.models import Cluster
from apps.fleet.services import NodeSpec, nodes_register
from apps.jobs.services import job_create
from apps.maintenance.models import MaintenanceWindow
from apps.maintenance.services import Booking, window_book


@pytest.fixture
def fleet(cluster: Cluster, api: Any) -> dict[str, Any]:
    start = timezone.now() - dt.timedelta(days=10)
    nodes = nodes_register(
        cluster=cluster,
        specs=[
            NodeSpec(hostname=f"n{i:02d}", rack=f"rack{i // 4}", in_service_at=start)
            for i in range(12)
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


def book(
    cluster: Cluster,
    nodes: str | list[str] | None = None,
    *,
    racks: list[str] | None = None,
    start: dt.datetime | None = None,
    minutes: float = 60,
    reason: str = "firmware upgrade",
) -> MaintenanceWindow:
    """Book a window through the service (starting now unless `start`)."""
    start = start or timezone.now()
    return window_book(
        booking=Booking(
            cluster=cluster,
            start=start,
            end=start + dt.timedelta(minutes=minutes),
            reason=reason,
            nodes=nodes,
            racks=racks,
        ),
        by="otto",
    )
