"""KUAE's own parts, each with when it last worked (docs/operations.md, Watching the watcher)."""

from __future__ import annotations

from django.db import models


class Heartbeat(models.Model):
    """When a part of KUAE last did its work: `beat` (its own tick), `worker:<name>` (a
    worker that answered the broadcast ping), `scraper`, `slurm_sync`. One row per part,
    overwritten each time."""

    part = models.CharField(max_length=200, unique=True)
    at = models.DateTimeField()
    # A worker's answer also says which queues it consumes, comma-wrapped (",celery,checks.big,")
    # so "who takes this queue" is one LIKE; empty for other parts and not yet answered.
    queues = models.CharField(max_length=2000, blank=True, default="")

    def __str__(self) -> str:
        return f"{self.part} at {self.at:%Y-%m-%d %H:%M:%S}"
