"""Twelve nodes in three racks, a running job on the first four, everyone heartbeating."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.utils import timezone

from apps.fleet.models import Cluster
from apps.maintenance.models import MaintenanceWindow
from apps.maintenance.services import Booking, window_book
from tests.support import heartbeating_fleet


@pytest.fixture
def fleet(cluster: Cluster, api: Any) -> dict[str, Any]:
    """Twelve nodes, a running job on the first four, all heartbeating."""
    return heartbeating_fleet(cluster, api, count=12, prefix="n", per_rack=4, rack="rack")


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
