"""A 16-node cluster with a running job on the first four nodes, everyone heartbeating."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.fleet.models import Node
from tests.support import heartbeating_fleet


@pytest.fixture
def fleet(cluster, api):  # noqa: ANN001, ANN201
    """Sixteen nodes, a running job on the first four, all heartbeating."""
    return heartbeating_fleet(cluster, api, count=16, prefix="h", per_rack=8, rack="r")


def backdate(hostname: str, seconds: float) -> dt.datetime:
    """As if the node went quiet `seconds` ago (the intake stamps receive time)."""
    when = timezone.now() - dt.timedelta(seconds=seconds)
    Node.objects.filter(hostname=hostname).update(last_seen_at=when, last_heartbeat_at=when)
    return when
