"""Beat's scheduler, recording its own tick (docs/operations.md, Watching the watcher).

The tick is written by the beat process itself, not by a task beat sends: a frozen or
absent worker must not make beat look dead. Set as `CELERY_BEAT_SCHEDULER`.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from celery.beat import PersistentScheduler

from apps.common.heartbeats import heartbeats_record

log = logging.getLogger(__name__)

BEAT_PART = "beat"
RECORD_EVERY_S = 5.0  # at most one write per this many seconds


class RecordingScheduler(PersistentScheduler):
    """Celery's default scheduler that writes the `beat` heartbeat as it ticks; its sleep
    is capped so the tick is written at least every `RECORD_EVERY_S`."""

    _recorded_at = 0.0

    def tick(self, *args: Any, **kwargs: Any) -> float:
        """Send what is due (Celery's own tick), then record the tick."""
        delay = super().tick(*args, **kwargs)
        now = time.monotonic()
        if now - self._recorded_at >= RECORD_EVERY_S:
            try:
                heartbeats_record([BEAT_PART])
                self._recorded_at = now
            except Exception:  # the database away: beat goes on sending, stale shows it
                log.exception("beat could not record its tick")
        return min(delay, RECORD_EVERY_S)
