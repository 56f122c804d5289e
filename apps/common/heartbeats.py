"""Record and read KUAE's own heartbeats (docs/operations.md, Watching the watcher)."""

from __future__ import annotations

import datetime as dt
import time
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


def workers_record(workers: dict[str, list[str] | None], *, at: dt.datetime | None = None) -> int:
    """Mark each worker (`celery@host`) as `worker:<name>` having answered at `at` (now),
    with the queues it consumes; None keeps the queues it last said. Returns how many."""
    at = at or timezone.now()
    for name, queues in workers.items():
        defaults: dict[str, object] = {"at": at}
        if queues is not None:
            defaults["queues"] = queues_wrap(queues)
        Heartbeat.objects.update_or_create(part=f"worker:{name}"[:200], defaults=defaults)
    return len(workers)


# A worker process records that it answered (by starting a task) at most this often.
ANSWER_EVERY_S = 5.0
_answered: dict[str, float] = {}


def worker_answered(hostname: str, *, now: float | None = None) -> bool:
    """A worker (`celery@host`) that starts a task has answered, as surely as it answers
    the broadcast ping: record `worker:<hostname>` now, its queues kept, at most every
    ANSWER_EVERY_S per process. A worker stalled and continued is live again with the
    first task it starts, not only once a ping gets through the backlog the stall left
    (issue 42; docs/operations.md, Watching the watcher). Returns whether it wrote."""
    now = time.monotonic() if now is None else now
    last = _answered.get(hostname)
    if last is not None and now - last < ANSWER_EVERY_S:
        return False
    _answered[hostname] = now
    workers_record({hostname: None})
    return True


def queues_wrap(queues: Iterable[str]) -> str:
    """Queue names as stored: sorted, comma-wrapped (",celery,checks.big,"), "" for none."""
    names = sorted({q for q in queues if q})
    return f",{','.join(names)}," if names else ""


def heartbeats() -> dict[str, dt.datetime]:
    """Every recorded part with when it last worked (one query)."""
    return dict(Heartbeat.objects.values_list("part", "at"))
