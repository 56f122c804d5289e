"""The Reporter's phases (docs/agent.md, Phases): time a run spends not training, kept until
the Reporter's sender posts them to `POST jobs/{id}/phases/`.

`startup` runs from the process's start to the first step; `checkpoint_restore` is what
`restored(step, load_s)` says; any other name is begun and ended by the run. A phase is
kept as the body the server takes (`{name, start, end, node, step?}`), at most `MAX_KEPT`
of them; one longer than the server's bound on a duration is not kept.
"""

from __future__ import annotations

import collections
import datetime as dt
import time
from typing import Any

from kuae_agent.watchdog import process_started_at

STARTUP = "startup"
RESTORE = "checkpoint_restore"
PHASE_MAX_S = 30 * 86_400  # the server's bound on a duration: a longer phase is not sent
MAX_KEPT = 1000


class PhaseBook:
    """Phases begun, ended and waiting to be sent. Not thread-safe beyond what a deque's
    append and popleft are: the training thread adds, the sender thread takes."""

    def __init__(self) -> None:
        self.waiting: collections.deque[dict[str, Any]] = collections.deque(maxlen=MAX_KEPT)
        self._open: dict[str, float] = {}  # phases begun and not yet ended: name → start
        self._startup_at: float | None = None  # process start, until the first step

    def startup_begins(self) -> None:
        """Count `startup` from this process's start, until `first_step`."""
        self._startup_at = process_start()

    def first_step(self, node: str | None) -> bool:
        """The first step: `startup` ends now. True when a phase was kept."""
        start, self._startup_at = self._startup_at, None
        return start is not None and self.add(STARTUP, start, time.time(), None, node)

    def begin(self, name: str, at: float | None = None) -> None:
        """The phase `name` begins now, or at `at` (seconds since the epoch)."""
        self._open[str(name)] = time.time() if at is None else float(at)

    def end(self, name: str, step: int | None, at: float | None, node: str | None) -> bool:
        """The phase `name` ends now, or at `at`; one not begun is ignored. True when kept."""
        start = self._open.pop(str(name), None)
        if start is None:
            return False
        end = time.time() if at is None else float(at)
        return self.add(str(name), start, end, None if step is None else int(step), node)

    def add(self, name: str, start: float, end: float, step: int | None, node: str | None) -> bool:
        """Keep the phase [start, end) unless its length is negative or past the server's
        bound. True when kept."""
        if not 0 <= end - start <= PHASE_MAX_S:
            return False
        body: dict[str, Any] = {"name": name, "start": iso(start), "end": iso(end), "node": node}
        if step is not None:
            body["step"] = int(step)
        self.waiting.append(body)
        return True

    def __len__(self) -> int:
        """How many phases wait to be sent."""
        return len(self.waiting)

    def take(self) -> list[dict[str, Any]]:
        """Every phase waiting, oldest first; they are no longer kept here."""
        out = []
        while self.waiting:
            out.append(self.waiting.popleft())
        return out


def iso(at: float) -> str:
    """Seconds since the epoch, ISO 8601 in UTC with microseconds."""
    return dt.datetime.fromtimestamp(at, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def process_start() -> float:
    """When this process started (/proc, as its rank registration reads it); now where /proc
    cannot tell."""
    try:
        text = process_started_at().replace("Z", "+00:00")
        return dt.datetime.fromisoformat(text).timestamp()
    except ValueError:
        return time.time()
