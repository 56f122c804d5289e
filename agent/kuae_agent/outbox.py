"""The training Reporter's outbox (report.py, docs/agent.md): batches waiting to be posted.

Batches wait in memory; past `memory_bytes` the oldest are spilled to a disk spool
(`spool_dir`, the node agent's format, so `kuae-agent flush --spool DIR` can deliver what a
dead run left), which keeps at most `spool_bytes` and drops its oldest beyond. Delivery goes
oldest first, the spool before memory, until the server asks to wait (a 5xx, a timeout, a
refused connection: the batch is kept and the backoff grows); a 4xx drops the batch with one
logged line. Only the Reporter's sender thread (or `close()`, holding its lock) calls it.
"""

from __future__ import annotations

import collections
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kuae_agent.backoff import Backoff
from kuae_agent.client import Client, Outcome
from kuae_agent.spool import Spool

if TYPE_CHECKING:
    from kuae_agent.report import Stats

log = logging.getLogger("kuae_agent.report")

JOB = "{job}"  # a spooled path's placeholder until the job's id is known


@dataclass
class Batch:
    """One request waiting to be delivered: in memory (`body`), or in the spool (`file`; its
    body is read back when it is sent, so the spool costs no memory)."""

    path: str  # may hold the JOB placeholder
    body: str | None
    samples: int
    file: Path | None = None
    size: int = 0


class Outbox:
    """Batches in memory (`pending`) and in the spool (`spooled`), oldest first, and what
    was dropped for want of room; counts what it delivers in the Reporter's `stats`."""

    def __init__(self, *, spool_dir: Path, spool_bytes: int, stats: Stats) -> None:
        self.spool_dir = spool_dir
        self.spool_bytes = spool_bytes
        self.stats = stats
        self.pending: collections.deque[Batch] = collections.deque()  # in memory
        self.pending_bytes = 0
        self.spool: Spool | None = None
        self.spooled: collections.deque[Batch] = collections.deque()  # on disk
        self.dropped = 0  # samples dropped by the sender (no spool, spool unwritable)

    @property
    def dropped_samples(self) -> int:
        """Samples dropped for want of room here or trimmed from the spool."""
        spool = self.spool
        return self.dropped + (spool.dropped_samples if spool is not None else 0)

    @property
    def held(self) -> int:
        """Samples held, in memory and in the spool."""
        return sum(b.samples for b in self.pending) + sum(b.samples for b in self.spooled)

    @property
    def spooled_bytes(self) -> int:
        return sum(b.size for b in self.spooled)

    def queue(self, batch: Batch) -> None:
        self.pending.append(batch)
        self.pending_bytes += batch.size

    def spill(self, *, memory_bytes: int, job_id: int | None, everything: bool = False) -> None:
        """Batches waiting in memory past `memory_bytes` (all, with `everything`) → spool."""
        while self.pending and (everything or self.pending_bytes > memory_bytes):
            batch = self.pending.popleft()
            self.pending_bytes -= batch.size
            spool = self._open_spool()
            body = batch.body or ""
            if spool is None:
                self.dropped += batch.samples
                continue
            path = batch.path.replace(JOB, str(job_id)) if job_id else batch.path
            before = spool.dropped
            try:
                file = spool.put(path, body, "application/json", {"samples": batch.samples})
            except OSError as exc:
                log.error("kuae Reporter: cannot spool %d sample(s): %s", batch.samples, exc)
                self.dropped += batch.samples
                continue
            self.spooled.append(Batch(path, None, batch.samples, file, len(body)))
            if spool.dropped != before:  # trimmed: forget what is gone
                self.spooled = collections.deque(
                    b for b in self.spooled if b.file is not None and b.file.exists()
                )

    def _open_spool(self) -> Spool | None:
        if self.spool is None:
            try:
                self.spool = Spool(self.spool_dir, max_bytes=self.spool_bytes)
            except OSError as exc:
                log.error("kuae Reporter: no spool at %s (%s)", self.spool_dir, exc)
                return None
        return self.spool

    def adopt(self) -> None:
        """What an earlier Reporter with this spool directory left: deliver it first."""
        if self.spool_dir.is_dir() and any(self.spool_dir.glob("*.json")):
            spool = self._open_spool()
            if spool is not None:
                for item in spool.pending():
                    samples = int(item.meta.get("samples", 1))
                    size = len(item.body)
                    self.spooled.append(Batch(item.path, None, samples, item.file, size))

    def deliver(
        self, client: Client, backoff: Backoff, *, job_id: int | None, flushing: bool
    ) -> None:
        """Spooled batches first (oldest), then those in memory, until one must wait."""
        while self.spooled or self.pending:
            on_disk = bool(self.spooled)
            batch = self.spooled[0] if on_disk else self.pending[0]
            path = batch.path.replace(JOB, str(job_id))
            body = batch.body if batch.body is not None else _read_spooled(batch.file)
            if body is None:  # trimmed from the spool meanwhile (counted there)
                self.spooled.popleft()
                continue
            outcome, reason = client.send(path, body, "application/json")
            if outcome is Outcome.RETRY:
                self.back_off(backoff, reason, flushing)
                return
            if on_disk:
                self.spooled.popleft()
                if batch.file is not None:
                    batch.file.unlink(missing_ok=True)
            else:
                self.pending.popleft()
                self.pending_bytes -= batch.size
            backoff.succeeded()
            if outcome is Outcome.STORED:
                self.stats.sent += batch.samples
            else:
                self.stats.rejected += batch.samples
                self.stats.last_error = reason
                log.error(
                    "kuae Reporter: server refused %d sample(s) for %s, dropped: %s",
                    batch.samples,
                    path,
                    reason[:300],
                )

    def back_off(self, backoff: Backoff, reason: str, flushing: bool) -> None:
        """Count a failed try and wait before the next (within a second while a flush waits)."""
        self.stats.retries += 1
        self.stats.last_error = reason
        # A flush (or close) is waiting on us: retry within a second, not the full cap.
        delay = backoff.failed(time.monotonic(), cap_s=1.0 if flushing else None)
        failures = backoff.failures
        if failures == 1 or failures % 10 == 0:
            log.warning(
                "kuae Reporter: server unavailable (%s); %d sample(s) held, retrying in %.1f s",
                reason,
                self.held,
                delay,
            )


def _read_spooled(file: Path | None) -> str | None:
    """A spooled request's body; None when the file is gone."""
    if file is None:
        return None
    try:
        body = json.loads(file.read_text())["body"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return body if isinstance(body, str) else None
