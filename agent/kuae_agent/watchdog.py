"""The rank watchdog (docs/agent.md, Ranks, the watchdog and `kuae-agent stacks`): what
every rank of a training job tells KUAE so that a hang names its culprit.

A hang reports no error, and every rank of a synchronous job stops at once; what each rank
is doing when it stops tells the one that is the cause from those that wait for it. Every
rank's `Reporter` starts a `Watchdog`, which

- registers the rank once (`POST /api/v1/jobs/{id}/ranks/`: rank, world size, node, local
  rank, pid and when the process started — a restarted job registers afresh);
- after the first `step()`, watches the time since the last one from a daemon thread that
  wakes every `poll_s` (1 s). When no step came for the stall window — max(`stall_min_s`
  = 60 s, 5 × the median step time of the last 50 steps) — it reads the training thread's
  stack (`sys._current_frames()`, only then) and posts a stall report
  (`POST /api/v1/ingest/stalls/`), again every `rereport_s` (5 min) while it lasts, and one
  `resumed` report when steps come again;
- keeps the newest report it could not deliver and retries it with the agent's backoff
  (backoff.py): a report superseded while the server was away is counted, not queued.

The training thread pays, per `step()`, one clock read and one append to a 51-entry
deque (`Watchdog.beat`): no lock, no I/O, never an exception. Everything else happens on
the watchdog's thread, whose CPU time `stats().cpu_s` counts.

`in_collective` and `stall_window` are pure, and `kuae-agent stacks` (stacks.py) builds the
same reports from `py-spy dump` for processes that run no Reporter.
"""

from __future__ import annotations

import collections
import datetime as dt
import linecache
import logging
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType
from typing import Any

from kuae_agent.backoff import Backoff
from kuae_agent.client import Client, Outcome
from kuae_agent.job import JobRef

log = logging.getLogger("kuae_agent.watchdog")

RANKS_PATH = "/api/v1/jobs/{job}/ranks/"
STALLS_PATH = "/api/v1/ingest/stalls/"
STALL_MIN_S = 60.0  # the stall window's floor
REREPORT_S = 300.0  # while stalled, a report every 5 minutes
POLL_S = 1.0  # how often the watchdog looks at the time since the last step
WINDOW = 50  # the stall window is 5 × the median of this many recent step times
STALL_FACTOR = 5.0
MAX_FRAMES = 64  # a stack keeps its innermost 64 frames
MAX_FILE = 1000
MAX_FUNCTION = 200

# torch.distributed's collectives and point-to-point calls (distributed_c10d.py, the
# functional collectives): a frame of one of these under torch/distributed/ means the rank
# waits on the others.
COLLECTIVES = frozenset(
    {
        "all_reduce",
        "all_reduce_coalesced",
        "all_gather",
        "all_gather_into_tensor",
        "all_gather_object",
        "all_gather_coalesced",
        "all_gather_tensor",
        "_all_gather_base",
        "broadcast",
        "broadcast_object_list",
        "reduce",
        "reduce_scatter",
        "reduce_scatter_tensor",
        "_reduce_scatter_base",
        "all_to_all",
        "all_to_all_single",
        "barrier",
        "monitored_barrier",
        "send",
        "recv",
        "isend",
        "irecv",
        "batch_isend_irecv",
        "send_object_list",
        "recv_object_list",
        "gather",
        "gather_object",
        "scatter",
        "scatter_object_list",
        "wait_tensor",
    }
)

Frame = dict[str, Any]  # {"file": str, "function": str, "line": int}


def in_collective(
    stack: Sequence[Mapping[str, Any]],
    source_line: Callable[[str, int], str] = linecache.getline,
) -> bool:
    """Whether a stack (innermost LAST) waits in a torch.distributed collective: one of its
    frames is a COLLECTIVES function in a file under `torch/distributed/`, or the innermost
    frame's source line calls `.wait(` (a `Work.wait()`, whose own frame is C++ and not on
    the stack). `source_line(file, line)` reads a line (default: linecache, from disk)."""
    for frame in stack:
        file = str(frame.get("file") or "").replace("\\", "/")
        if "/torch/distributed/" in file:
            name = str(frame.get("function") or "").rsplit(".", 1)[-1]
            if name in COLLECTIVES:
                return True
    if not stack:
        return False
    inner = stack[-1]
    try:
        text = source_line(str(inner.get("file") or ""), int(inner.get("line") or 0))
    except Exception:  # an unreadable file is no evidence either way
        return False
    return ".wait(" in (text or "")


def stall_window(step_times: Iterable[float], minimum_s: float = STALL_MIN_S) -> float:
    """The stall window: max(`minimum_s`, 5 × the median of the last 50 `step_times`)."""
    recent = [t for t in step_times if t >= 0][-WINDOW:]
    if not recent:
        return minimum_s
    return max(minimum_s, STALL_FACTOR * statistics.median(recent))


def step_times(beats: Sequence[tuple[float, Any]]) -> list[float]:
    """The times between consecutive `(monotonic time, step)` beats."""
    return [b[0] - a[0] for a, b in zip(beats, beats[1:], strict=False)]


def frames_of(frame: FrameType | None, limit: int = MAX_FRAMES) -> list[Frame]:
    """A Python stack from its innermost `frame` outwards, as frames innermost LAST (the
    innermost `limit` of them)."""
    out: list[Frame] = []
    while frame is not None and len(out) < limit:
        code = frame.f_code
        out.append(
            {
                "file": code.co_filename[:MAX_FILE],
                "function": code.co_qualname[:MAX_FUNCTION],
                "line": max(0, frame.f_lineno or 0),
            }
        )
        frame = frame.f_back
    out.reverse()
    return out


def iso_now() -> str:
    """Now, ISO 8601 in UTC with microseconds (`2026-11-23T08:00:00.000001Z`)."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def process_started_at(pid: int | None = None) -> str:
    """When process `pid` (default this one) started, ISO 8601 in UTC — from /proc (the
    same answer every time, so a re-sent registration changes nothing); now where /proc
    cannot tell."""
    try:
        stat = Path(f"/proc/{pid or os.getpid()}/stat").read_text()
        ticks = int(stat.rsplit(")", 1)[1].split()[19])  # field 22: starttime
        boot = next(
            int(line.split()[1])
            for line in Path("/proc/stat").read_text().splitlines()
            if line.startswith("btime ")
        )
        at = boot + ticks / os.sysconf("SC_CLK_TCK")
        return dt.datetime.fromtimestamp(at, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    except (OSError, ValueError, IndexError, StopIteration):
        return iso_now()


@dataclass
class WatchdogStats:
    """What the watchdog has done so far (`Watchdog.stats()`, `Reporter.stats().watchdog`)."""

    registered: bool = False  # the server took the rank's registration
    stalled: bool = False  # a stall is on now
    stalls: int = 0  # stalls begun
    reports: int = 0  # reports made (stall, re-report, resumed)
    sent: int = 0  # reports the server took
    superseded: int = 0  # reports replaced by a newer one before they could be sent
    rejected: int = 0  # reports and registrations the server answered 4xx
    retries: int = 0
    last_error: str = ""
    polls: int = 0
    cpu_s: float = 0.0  # the watchdog thread's CPU time (time.thread_time())


@dataclass
class _Stall:
    since: float  # monotonic time of the last step before it
    step: Any
    reported: float  # monotonic time of its last report


class Watchdog:
    """Registers one rank and reports its stalls (see the module's docstring). Call `beat`
    from the training thread at every step, `start` once, `close` at the end."""

    def __init__(
        self,
        *,
        server: str,
        token: str,
        job: JobRef,
        node: str,
        rank: int,
        world_size: int,
        local_rank: int | None = None,
        pid: int | None = None,
        started_at: str | None = None,
        stall_min_s: float = STALL_MIN_S,
        rereport_s: float = REREPORT_S,
        poll_s: float = POLL_S,
        timeout_s: float = 5.0,
        backoff_max_s: float = 30.0,
    ) -> None:
        self.job = job
        self.node = node
        self.rank = rank
        self.world_size = max(world_size, rank + 1, 1)
        self.stall_min_s = stall_min_s
        self.rereport_s = rereport_s
        self.poll_s = poll_s
        self._beats: collections.deque[tuple[float, Any]] = collections.deque(maxlen=WINDOW + 1)
        self._ident: int | None = None  # the training thread, from the first beat
        self._stall: _Stall | None = None
        entry: dict[str, Any] = {
            "rank": rank,
            "world_size": self.world_size,
            "node": node,
            "pid": os.getpid() if pid is None else pid,
            "started_at": started_at or process_started_at(pid),
        }
        if local_rank is not None:
            entry["local_rank"] = local_rank
        self.registration: dict[str, Any] = {"ranks": [entry]}
        self._register: dict[str, Any] | None = self.registration  # until delivered
        self._report: dict[str, Any] | None = None  # the newest report not yet delivered
        self._client = Client(server, token, timeout_s=timeout_s)
        self._backoff = Backoff(base_s=1.0, max_s=backoff_max_s)
        self._stats = WatchdogStats()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._logged_lookup = False
        self._logged_error = False

    # --- the training thread -----------------------------------------------------------

    def beat(self, step: Any) -> None:
        """A step has been taken (the training thread; never blocks, never raises)."""
        try:
            if self._ident is None:
                self._ident = threading.get_ident()
            self._beats.append((time.monotonic(), step))
        except Exception:  # never raise into the training loop
            pass

    # --- anyone ------------------------------------------------------------------------

    def start(self) -> None:
        """Start the watchdog's daemon thread (once)."""
        if self._thread is None and not self._closed:
            self._thread = threading.Thread(target=self._run, name="kuae-watchdog", daemon=True)
            self._thread.start()

    def close(self, timeout_s: float = 2.0) -> None:
        """Stop the thread (it tries once more to deliver what it holds), waiting up to
        `timeout_s` for it. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=max(0.0, timeout_s))
        else:
            self._client.close()

    def stats(self) -> WatchdogStats:
        """A snapshot of what the watchdog has done."""
        return replace(self._stats, stalled=self._stall is not None)

    # --- the watchdog thread -----------------------------------------------------------

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._tick(time.monotonic())
                self._stats.cpu_s = time.thread_time()
                self._stop.wait(self.poll_s)
            if self._register is not None or self._report is not None:
                self._safe(self._deliver, time.monotonic())  # one last try
        finally:
            self._stats.cpu_s = time.thread_time()
            self._client.close()

    def _tick(self, now: float) -> None:
        self._stats.polls += 1
        self._safe(self._watch, now)
        if (self._register is not None or self._report is not None) and self._backoff.ready(now):
            self._safe(self._deliver, now)

    def _safe(self, fn: Callable[[float], None], now: float) -> None:
        try:
            fn(now)
        except Exception as exc:  # the watchdog must outlive any surprise
            if not self._logged_error:
                self._logged_error = True
                log.exception("kuae watchdog: error (%s); carrying on", exc)

    def _watch(self, now: float) -> None:
        """Begin, repeat or end a stall, by the time since the last beat."""
        beats = self._beats
        if not beats:
            return  # not armed before the first step
        last_t, last_step = beats[-1]
        stall = self._stall
        if stall is None:
            idle = now - last_t
            if idle < self.stall_min_s:  # the window is never shorter: no median needed
                return
            window = stall_window(step_times(list(beats)), self.stall_min_s)
            if idle < window:
                return
            self._stall = _Stall(since=last_t, step=last_step, reported=now)
            self._stats.stalls += 1
            self._queue(self._stall_report(idle, last_step))
        elif last_t > stall.since:  # steps came again
            seen = list(beats)  # a copy: the training thread appends meanwhile
            first_t, first_step = next(((t, s) for t, s in seen if t > stall.since), seen[-1])
            self._stall = None
            report = self._body(first_step, first_t - stall.since, [], resumed=True)
            self._queue(report)
        elif now - stall.reported >= self.rereport_s:
            stall.reported = now
            self._queue(self._stall_report(now - stall.since, stall.step))

    def _stall_report(self, stalled_s: float, step: Any) -> dict[str, Any]:
        ident = self._ident
        frame = sys._current_frames().get(ident) if ident is not None else None
        stack = frames_of(frame)
        del frame
        return self._body(step, stalled_s, stack, resumed=False)

    def _body(
        self, step: Any, stalled_s: float, stack: list[Frame], *, resumed: bool
    ) -> dict[str, Any]:
        try:
            last_step: int | None = int(step)
        except (TypeError, ValueError, OverflowError):
            last_step = None
        return {
            "node": self.node,
            "ts": iso_now(),
            "rank": self.rank,
            "world_size": self.world_size,
            "last_step": last_step,
            "stalled_s": round(max(0.0, stalled_s), 3),
            "stack": stack,
            "in_collective": in_collective(stack) if stack else False,
            "resumed": resumed,
        }

    def _queue(self, report: dict[str, Any]) -> None:
        self._stats.reports += 1
        if self._report is not None:
            self._stats.superseded += 1
        self._report = report
        self._backoff.retry_now()  # a new report is worth a try now

    def _deliver(self, now: float) -> None:
        """The job (looked up if need be), then the registration, then the newest report."""
        job_id, reason = self.job.resolve(self._client)
        if job_id is None:
            if not self._logged_lookup:
                self._logged_lookup = True
                log.warning("kuae watchdog: the job is not known yet (%s); retrying", reason)
            self._failed(now, reason)
            return
        if self._register is not None:
            outcome, answer = self._client.request_json(
                "POST", RANKS_PATH.format(job=job_id), body=self._register
            )
            if outcome is Outcome.RETRY:
                self._failed(now, str(answer))
                return
            self._register = None
            self._backoff.succeeded()
            if outcome is Outcome.STORED:
                self._stats.registered = True
            else:
                self._rejected("the rank's registration", str(answer))
        report = self._report
        if report is not None:
            outcome, answer = self._client.request_json(
                "POST", STALLS_PATH, body={"job": job_id, **report}
            )
            if outcome is Outcome.RETRY:
                self._failed(now, str(answer))
                return
            self._report = None
            self._backoff.succeeded()
            if outcome is Outcome.STORED:
                self._stats.sent += 1
            else:
                self._rejected("a stall report", str(answer))

    def _rejected(self, what: str, reason: str) -> None:
        self._stats.rejected += 1
        self._stats.last_error = reason
        log.error("kuae watchdog: the server did not take %s, dropped: %s", what, reason[:300])

    def _failed(self, now: float, reason: str) -> None:
        self._stats.retries += 1
        self._stats.last_error = reason
        delay = self._backoff.failed(now)
        failures = self._backoff.failures
        if failures == 1 or failures % 10 == 0:
            log.warning("kuae watchdog: server unavailable (%s); retrying in %.1f s", reason, delay)
