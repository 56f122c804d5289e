"""Retention of telemetry rollups and events (latest values are kept)."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

from apps.common.retention import prune_before
from apps.telemetry.models import NodeRollup, PortRollup, TelemetryEvent


def rollups_prune(*, older_than_days: int, now: dt.datetime | None = None) -> int:
    """Delete 5-minute rollups, the GPUs' and the ports', older than the given age (the
    GPUs' on PostgreSQL by dropping whole days' partitions); returns how many."""
    cutoff = (now or timezone.now()) - dt.timedelta(days=older_than_days)
    return prune_before(NodeRollup, "bucket", cutoff) + prune_before(PortRollup, "bucket", cutoff)


def events_prune(*, older_than_days: int, now: dt.datetime | None = None) -> int:
    """Delete telemetry events (XIDs, counters that grew, ports' and ranks' events) whose
    time is older than the given age, in bounded batches; returns how many."""
    cutoff = (now or timezone.now()) - dt.timedelta(days=older_than_days)
    return prune_before(TelemetryEvent, "at", cutoff)
