"""Retention of telemetry rollups (latest values and events are kept)."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

from apps.common.retention import prune_before
from apps.telemetry.models import NodeRollup, PortRollup


def rollups_prune(*, older_than_days: int, now: dt.datetime | None = None) -> int:
    """Delete 5-minute rollups, the GPUs' and the ports', older than the given age (the
    GPUs' on PostgreSQL by dropping whole days' partitions); returns how many."""
    cutoff = (now or timezone.now()) - dt.timedelta(days=older_than_days)
    return prune_before(NodeRollup, "bucket", cutoff) + prune_before(PortRollup, "bucket", cutoff)
