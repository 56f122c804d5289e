"""Retention of telemetry rollups (latest values and events are kept)."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

from apps.common.retention import delete_in_batches
from apps.fleet.models import NodeRollup


def rollups_prune(*, older_than_days: int, now: dt.datetime | None = None) -> int:
    """Delete 5-minute rollups older than the given age; returns how many."""
    cutoff = (now or timezone.now()) - dt.timedelta(days=older_than_days)
    return delete_in_batches(NodeRollup.objects.filter(bucket__lt=cutoff))
