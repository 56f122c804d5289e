"""Record and read KUAE's own heartbeats (docs/operations.md, Watching the watcher)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from django.utils import timezone

from apps.common.models import Heartbeat


def heartbeats_record(parts: Iterable[str], *, at: dt.datetime | None = None) -> int:
    """Mark each part as having worked at `at` (now); returns how many were written."""
    at = at or timezone.now()
    names = list(dict.fromkeys(parts))
    for name in names:
        Heartbeat.objects.update_or_create(part=name[:200], defaults={"at": at})
    return len(names)


def heartbeats() -> dict[str, dt.datetime]:
    """Every recorded part with when it last worked (one query)."""
    return dict(Heartbeat.objects.values_list("part", "at"))
