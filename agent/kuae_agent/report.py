"""The training Reporter (docs/agent.md): step progress and checkpoints from inside a run.

    from kuae_agent.report import Reporter
    rep = Reporter()                  # server, token, job from the environment
    for step in ...:
        rep.step(step, step_time_s=dt, tokens_per_s=tps, loss=loss, grad_norm=gn, compute_s=c)
    rep.checkpoint(step, saved_at=t0, blocking_s=b, size_bytes=n)
    rep.restored(step, load_s=12.5)   # a checkpoint restore that took 12.5 s, just now
    with rep.phase("eval"):           # time the run spends not training
        evaluate()
    rep.close()                       # flushes; also at interpreter exit

`step()` costs the training thread a clock read and a deque append: it never blocks, never
raises, and does no I/O. A background thread cuts what it holds into batches (every
`flush_every_s` = 5 s or `batch_size` = 500 samples) and posts them to
`POST jobs/{id}/metrics/`. A 5xx, a timeout or a refused connection keeps the batch and
retries it with exponential backoff (jittered, up to `backoff_max_s`); batches waiting past
`memory_bytes` are spilled to a disk spool (`spool_dir`, the node agent's format, so
`kuae-agent flush --spool DIR` can deliver what a dead run left); a 4xx drops the batch with
one logged line (the batches, spool and delivery: outbox.py). When the spool passes
`spool_bytes` its oldest batches go, and when the in-memory buffer itself is full (the
sender cannot keep up) its oldest samples go: both are counted in `dropped`, logged, and in
`stats()`.

Phases (docs/agent.md, Phases) mark time the run spends not training: `startup` from the
process's start to the first `step()` with no call, `restored()` for `checkpoint_restore`,
`phase(name)` (a context manager) or `phase_start(name)`/`phase_end(name)` for any other;
rank 0 sends them, with its node, to `POST jobs/{id}/phases/` through the same batches,
backoff and spool. The server identifies a phase by (job, name, start).

Every sample carries its own timestamp (microseconds, strictly increasing within a
Reporter), and the server identifies a job metric sample by (job, node or none, ts) and a
checkpoint by (job, saved_at): a batch retried after a lost answer is stored once.

Who sends what: rank 0 (`RANK`, else `SLURM_PROCID`; 0 when neither is set) sends job-wide
samples and checkpoints; the first local rank of every node (`LOCAL_RANK`, else
`SLURM_LOCALID`; 0 when neither is set) sends that node's sample (`node`, `compute_s`);
other ranks send no samples and start no sender thread. Explicit arguments override it all.

Every rank, whatever it sends, runs a watchdog (watchdog.py): it registers the rank once
(`POST jobs/{id}/ranks/`, world size from `WORLD_SIZE`, else `SLURM_NTASKS`, else 1) and,
after the first `step()`, posts a stall report with the training thread's stack when no
step has come for the stall window (max(60 s, 5 × the median step time)), again every
5 minutes while it lasts, and a `resumed` one when steps come again. On those ranks
`step()` only tells the watchdog (a clock read and a deque append). `watchdog=False` turns
it off.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import datetime as dt
import json
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kuae_agent import config
from kuae_agent.backoff import Backoff
from kuae_agent.client import Client
from kuae_agent.job import JobRef
from kuae_agent.outbox import JOB, Batch, Outbox
from kuae_agent.phases import RESTORE, PhaseBook
from kuae_agent.samples import Raw, step_samples
from kuae_agent.watchdog import (
    POLL_S,
    REREPORT_S,
    STALL_MIN_S,
    Watchdog,
    WatchdogStats,
)

log = logging.getLogger("kuae_agent.report")

METRICS_PATH = f"/api/v1/jobs/{JOB}/metrics/"
CHECKPOINTS_PATH = f"/api/v1/jobs/{JOB}/checkpoints/"
PHASES_PATH = f"/api/v1/jobs/{JOB}/phases/"
MIB = 1024 * 1024


@dataclass
class Stats:
    """What the Reporter has done so far (`Reporter.stats()`)."""

    sent: int = 0  # samples (and checkpoints and phases) the server stored
    rejected: int = 0  # dropped because the server answered 4xx
    dropped: int = 0  # dropped for want of room (buffer full, spool full)
    invalid: int = 0  # not sent: a step time or token rate that is not a number ≥ 0
    pending: int = 0  # held now: buffered, in memory or spooled
    spooled_bytes: int = 0
    job_id: int | None = None
    last_error: str = ""
    retries: int = 0
    watchdog: WatchdogStats | None = None  # the rank's watchdog, when it runs one
    extra: dict[str, Any] = field(default_factory=dict)


class Reporter:
    """Reports a training run's steps and checkpoints to KUAE Ops from a background thread.

    Arguments override the environment: `server` (KUAE_SERVER), `token` (KUAE_TOKEN or the
    file KUAE_TOKEN_FILE names), `job_id` (KUAE_JOB_ID; else the job whose `external_id` is
    `slurm_job_id` (SLURM_JOB_ID) in `cluster` (KUAE_CLUSTER), looked up by the sender),
    `node` (KUAE_NODE or the host name), `rank` (RANK, SLURM_PROCID), `local_rank`
    (LOCAL_RANK, SLURM_LOCALID), `world_size` (WORLD_SIZE, SLURM_NTASKS, else 1);
    `job_wide` and `per_node` override what the ranks decide. `watchdog` (default on, every
    rank) registers the rank and reports its stalls; `stall_min_s`, `stall_rereport_s` and
    `stall_poll_s` are its intervals. `startup` (default on) records the `startup` phase, from
    the process's start to the first `step()`: turn it off for a Reporter made long after
    its process began (a notebook). Without a server, a token or a job it reports nothing
    and says so once in the log.
    """

    def __init__(
        self,
        *,
        server: str | None = None,
        token: str | None = None,
        job_id: int | None = None,
        cluster: str | None = None,
        slurm_job_id: str | None = None,
        node: str | None = None,
        rank: int | None = None,
        local_rank: int | None = None,
        world_size: int | None = None,
        job_wide: bool | None = None,
        per_node: bool | None = None,
        spool_dir: Path | str | None = None,
        flush_every_s: float = 5.0,
        batch_size: int = 500,
        buffer_size: int = 50_000,
        memory_bytes: int = 8 * MIB,
        spool_bytes: int = 256 * MIB,
        timeout_s: float = 5.0,
        backoff_max_s: float = 30.0,
        close_timeout_s: float = 10.0,
        env: Mapping[str, str] | None = None,
        at_exit: bool = True,
        watchdog: bool = True,
        stall_min_s: float = STALL_MIN_S,
        stall_rereport_s: float = REREPORT_S,
        stall_poll_s: float = POLL_S,
        startup: bool = True,
    ) -> None:
        env = os.environ if env is None else env
        self._on = False
        self._buf: collections.deque[Raw] = collections.deque(maxlen=max(1, buffer_size))
        self._cap = max(1, buffer_size)
        self._last_us = 0
        self._dropped_buffer = 0  # steps; written by step() only
        self._ckpts: collections.deque[dict[str, Any]] = collections.deque(maxlen=1000)
        self._phases = PhaseBook()  # kept until the sender posts them
        self._stats = Stats()
        self._thread: threading.Thread | None = None
        self._watchdog: Watchdog | None = None
        self._beat: Callable[[Any], None] | None = None  # the watchdog's, called by step()
        self._closed = False
        self._lock = threading.Lock()  # the sender's state, for stats() and close()
        self.flush_every_s = flush_every_s
        self.batch_size = max(1, batch_size)
        self.memory_bytes = memory_bytes
        self.spool_bytes = spool_bytes
        self.backoff_max_s = backoff_max_s
        self.close_timeout_s = close_timeout_s
        self._timeout_s = timeout_s
        try:
            self.server = (server or config.server(env)).rstrip("/")
            self.token = token or config.token(env)
        except OSError as exc:  # KUAE_TOKEN_FILE unreadable
            self.server, self.token = "", ""
            log.warning("kuae Reporter: cannot read the token (%s): reporting nothing", exc)
        self.node = node or config.node(env)
        env_job = config.integer(env, "KUAE_JOB_ID")
        self.cluster = cluster or env.get("KUAE_CLUSTER", "")
        self.slurm_job_id = slurm_job_id or env.get("SLURM_JOB_ID", "")
        # Shared with the watchdog: whichever thread asks first looks the job up.
        given = job_id if job_id is not None else env_job
        self._job = JobRef(given, self.slurm_job_id, self.cluster)
        self.rank = rank if rank is not None else config.integer(env, "RANK", "SLURM_PROCID") or 0
        self.local_rank = (
            local_rank
            if local_rank is not None
            else config.integer(env, "LOCAL_RANK", "SLURM_LOCALID") or 0
        )
        self.world_size = (
            world_size
            if world_size is not None
            else config.integer(env, "WORLD_SIZE", "SLURM_NTASKS") or 1
        )
        self.job_wide = self.rank == 0 if job_wide is None else job_wide
        self.per_node = self.local_rank == 0 if per_node is None else per_node
        key = str(self.job_id or f"slurm-{self.slurm_job_id}")
        default_spool = (
            Path(env.get("KUAE_SPOOL_DIR") or tempfile.gettempdir())
            / "kuae-reporter"
            / f"{key}-{self.node}-r{self.rank}-{os.getpid()}"
        )
        self.spool_dir = Path(spool_dir) if spool_dir is not None else default_spool
        # Batches waiting, in memory then spooled (outbox.py): the sender's alone.
        self._outbox = Outbox(spool_dir=self.spool_dir, spool_bytes=spool_bytes, stats=self._stats)
        sends = self.job_wide or self.per_node
        if not (sends or watchdog):
            return  # this rank sends nothing
        missing = [
            name
            for name, ok in (
                ("KUAE_SERVER", self.server),
                ("KUAE_TOKEN", self.token),
                ("KUAE_JOB_ID (or SLURM_JOB_ID and KUAE_CLUSTER)", self._job.resolvable),
            )
            if not ok
        ]
        if missing:
            log.warning("kuae Reporter: %s not set: reporting nothing", ", ".join(missing))
            return
        if watchdog:
            self._watchdog = Watchdog(
                server=self.server,
                token=self.token,
                job=self._job,
                node=self.node,
                rank=self.rank,
                world_size=self.world_size,
                local_rank=self.local_rank,
                stall_min_s=stall_min_s,
                rereport_s=stall_rereport_s,
                poll_s=stall_poll_s,
                timeout_s=timeout_s,
                backoff_max_s=backoff_max_s,
            )
            self._watchdog.start()
            self._beat = self._watchdog.beat
        if not sends:  # the watchdog alone: no sender thread
            if at_exit:
                atexit.register(self.close)
            return
        self._client = Client(self.server, self.token, timeout_s=timeout_s)
        # The first wait is 1 s (0.5–1 s jittered), doubling up to `backoff_max_s`.
        self._backoff = Backoff(base_s=1.0, max_s=backoff_max_s)
        self._last_cut = time.monotonic()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._flushing = 0
        self._idle = threading.Condition()
        self._prev_us: int | None = None
        self._logged_dropped = 0
        self._logged_invalid = False
        self._lookup_logged = False
        if self.job_wide and startup:
            self._phases.startup_begins()
        self._on = True
        self._thread = threading.Thread(target=self._run, name="kuae-reporter", daemon=True)
        self._thread.start()
        if at_exit:
            atexit.register(self.close)

    @property
    def job_id(self) -> int | None:
        """The job's id: given, from KUAE_JOB_ID, or found by its Slurm id (None until)."""
        return self._job.id

    @job_id.setter
    def job_id(self, value: int | None) -> None:
        self._job.id = value

    # --- the training thread -----------------------------------------------------------

    def step(
        self,
        step: int,
        step_time_s: float | None = None,
        tokens_per_s: float | None = None,
        loss: Any = None,
        grad_norm: Any = None,
        compute_s: float | None = None,
    ) -> None:
        """Record one training step (never blocks, never raises). `step_time_s` defaults to
        the time since the previous call; values may be tensors (read on the sender thread)."""
        beat = self._beat
        if beat is not None:
            beat(step)  # the watchdog's: never raises
        if not self._on:
            return
        if self.job_wide and self._phases.first_step(self.node):
            self._wake.set()
        try:
            us = time.time_ns() // 1000
            if us <= self._last_us:
                us = self._last_us + 1
            self._last_us = us
            if len(self._buf) >= self._cap:
                self._dropped_buffer += 1  # the deque drops its oldest sample
            self._buf.append((us, step, step_time_s, tokens_per_s, loss, grad_norm, compute_s))
        except Exception:  # never raise into the training loop
            pass

    def checkpoint(
        self,
        step: int,
        saved_at: dt.datetime | float | None = None,
        blocking_s: float = 0.0,
        size_bytes: int | None = None,
    ) -> None:
        """Record a checkpoint: `saved_at` when the save began (a datetime, or seconds since
        the epoch; default now − `blocking_s`), `blocking_s` how long training paused for it.
        Rank 0's job; never blocks, never raises."""
        if not (self._on and self.job_wide):
            return
        try:
            if saved_at is None:
                at = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=float(blocking_s))
            elif isinstance(saved_at, dt.datetime):
                at = saved_at if saved_at.tzinfo else saved_at.astimezone()
            else:
                at = dt.datetime.fromtimestamp(float(saved_at), tz=dt.UTC)
            body: dict[str, Any] = {
                "step": int(step),
                "saved_at": at.astimezone(dt.UTC).isoformat().replace("+00:00", "Z"),
                "blocking_s": max(0.0, float(blocking_s)),
            }
            if size_bytes is not None:
                body["size_bytes"] = int(size_bytes)
            self._ckpts.append(body)
            self._wake.set()
        except Exception:  # never raise into the training loop
            log.warning("kuae Reporter: checkpoint(%r …) not understood: not reported", step)

    def restored(self, step: int, load_s: float) -> None:
        """A checkpoint was just restored, at `step`, taking `load_s` seconds: the phase
        `checkpoint_restore` [now − load_s, now]. Rank 0's job; never blocks, never raises."""
        try:
            end = time.time()
            if self._on and self.job_wide:
                start = end - max(0.0, float(load_s))
                self._phase_kept(self._phases.add(RESTORE, start, end, int(step), self.node))
        except Exception:  # never raise into the training loop
            log.warning(
                "kuae Reporter: restored(%r, %r) not understood: not reported", step, load_s
            )

    def phase_start(self, name: str, at: float | None = None) -> None:
        """A phase of the run not spent training begins now (`eval`, `data_wait`, …), or at
        `at` (seconds since the epoch); `phase_end(name)` ends it. Never blocks, never
        raises."""
        if self._on and self.job_wide:
            try:
                self._phases.begin(name, at)
            except Exception:  # never raise into the training loop
                log.warning("kuae Reporter: phase %r not understood: not reported", name)

    def phase_end(self, name: str, step: int | None = None, at: float | None = None) -> None:
        """The phase `name` begun by `phase_start` ends now, or at `at` (one not begun is
        ignored)."""
        if not (self._on and self.job_wide):
            return
        try:
            self._phase_kept(self._phases.end(name, step, at, self.node))
        except Exception:  # never raise into the training loop
            log.warning("kuae Reporter: phase %r not understood: not reported", name)

    @contextlib.contextmanager
    def phase(self, name: str, step: int | None = None) -> Iterator[None]:
        """`with rep.phase("eval"):` — the block's time as the phase `name` (also when it
        raises: the exception goes on)."""
        self.phase_start(name)
        try:
            yield
        finally:
            self.phase_end(name, step)

    def _phase_kept(self, kept: bool) -> None:
        if kept:
            self._wake.set()

    def flush(self, timeout_s: float | None = None) -> bool:
        """Post everything recorded so far; True when the server has stored it all within
        `timeout_s` (default `close_timeout_s`). Waits; call it outside the hot loop."""
        if not self._on and self._thread is None:
            return True
        timeout_s = self.close_timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout_s
        with self._idle:
            self._flushing += 1
        try:
            self._backoff.retry_now()  # try now, whatever the backoff said
            self._wake.set()
            with self._idle:
                while not self._empty():
                    left = deadline - time.monotonic()
                    if left <= 0 or self._thread is None or not self._thread.is_alive():
                        return False
                    self._idle.wait(min(left, 0.1))
                    self._wake.set()
            return True
        finally:
            with self._idle:
                self._flushing -= 1

    def close(self, timeout_s: float | None = None) -> None:
        """Stop recording, flush (up to `timeout_s`), and keep on disk whatever the server
        has not stored by then (the spool). Safe to call twice; also runs at exit."""
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.close)
        try:
            self._close_sender(timeout_s)
        finally:
            if self._watchdog is not None:
                wait = self.close_timeout_s if timeout_s is None else timeout_s
                self._watchdog.close(min(wait, self._timeout_s + 1.0))

    def _close_sender(self, timeout_s: float | None) -> None:
        if self._thread is None:
            return
        try:
            self.flush(timeout_s)
        finally:
            self._on = False
            self._stop.set()
            self._wake.set()
            self._thread.join(timeout=self._timeout_s + 1.0)
            if self._lock.acquire(timeout=self._timeout_s + 1.0):
                try:
                    self._cut_all()
                    self._outbox.spill(
                        memory_bytes=self.memory_bytes, job_id=self.job_id, everything=True
                    )
                finally:
                    self._lock.release()
            self._client.close()
            left = self.stats()
            if left.pending:
                log.warning(
                    "kuae Reporter: %d sample(s) not delivered, kept in %s "
                    "(`kuae-agent flush --spool %s` delivers them once the job is known)",
                    left.pending,
                    self.spool_dir,
                    self.spool_dir,
                )

    @property
    def dropped(self) -> int:
        """Samples dropped for want of room (a full buffer, a full or unwritable spool)."""
        return self._dropped_buffer * self._per_step + self._outbox.dropped_samples

    def stats(self) -> Stats:
        """A snapshot of what has been sent, dropped and is still held."""
        s = Stats(**{k: v for k, v in vars(self._stats).items() if k not in ("extra", "watchdog")})
        s.dropped = self.dropped
        s.job_id = self.job_id
        if self._watchdog is not None:
            s.watchdog = self._watchdog.stats()
        if self._thread is not None:
            with self._lock:
                held = self._outbox.held
                s.spooled_bytes = self._outbox.spooled_bytes
            s.pending = (
                held + len(self._buf) * self._per_step + len(self._ckpts) + len(self._phases)
            )
        return s

    # --- the sender thread -------------------------------------------------------------

    @property
    def _per_step(self) -> int:
        return int(self.job_wide) + int(self.per_node)

    def _empty(self) -> bool:
        return not (
            self._buf
            or self._ckpts
            or self._phases.waiting
            or self._outbox.pending
            or self._outbox.spooled
        )

    def _run(self) -> None:
        self._outbox.adopt()
        while True:
            self._wake.wait(0.25)
            self._wake.clear()
            try:
                with self._lock:
                    self._tick()
            except Exception as exc:  # the sender must outlive any surprise
                log.exception("kuae Reporter: sender error (%s); carrying on", exc)
                time.sleep(0.5)
            with self._idle:
                self._idle.notify_all()
            if self._stop.is_set():
                return

    def _tick(self) -> None:
        now = time.monotonic()
        flushing = self._flushing > 0 or self._stop.is_set()
        if (
            flushing
            or len(self._buf) >= self.batch_size
            or now - self._last_cut >= self.flush_every_s
        ):
            self._cut_all()
            self._last_cut = now
        self._outbox.spill(memory_bytes=self.memory_bytes, job_id=self.job_id)
        self._report_drops()
        if not self._backoff.ready(now) or not (self._outbox.pending or self._outbox.spooled):
            return
        if self.job_id is None and not self._lookup():
            return
        self._outbox.deliver(self._client, self._backoff, job_id=self.job_id, flushing=flushing)

    def _cut_all(self) -> None:
        """Buffered steps, checkpoints and phases → batches waiting in memory."""
        while self._ckpts:
            text = json.dumps(self._ckpts.popleft())
            self._outbox.queue(Batch(CHECKPOINTS_PATH, text, 1, size=len(text)))
        phases = self._phases.take()
        if phases:
            text = json.dumps({"phases": phases})
            self._outbox.queue(Batch(PHASES_PATH, text, len(phases), size=len(text)))
        samples: list[dict[str, Any]] = []
        while self._buf:
            try:
                raw = self._buf.popleft()
            except IndexError:
                break
            samples.extend(self._samples(raw))
            if len(samples) >= self.batch_size:
                self._queue_samples(samples)
                samples = []
        if samples:
            self._queue_samples(samples)

    def _queue_samples(self, samples: list[dict[str, Any]]) -> None:
        body = json.dumps({"samples": samples})
        self._outbox.queue(Batch(METRICS_PATH, body, len(samples), size=len(body)))

    def _samples(self, raw: Raw) -> list[dict[str, Any]]:
        prev, self._prev_us = self._prev_us, raw[0]
        out = step_samples(
            raw, prev, job_wide=self.job_wide, per_node=self.per_node, node=self.node
        )
        return self._invalid(raw[1]) if out is None else out

    def _invalid(self, step: Any) -> list[dict[str, Any]]:
        self._stats.invalid += 1
        if not self._logged_invalid:
            self._logged_invalid = True
            log.warning(
                "kuae Reporter: step %r has no step time or token rate that is a number ≥ 0: "
                "not sent (further ones are counted, not logged)",
                step,
            )
        return []

    def _lookup(self) -> bool:
        """Find the job by its Slurm id (JobRef, shared with the watchdog, which may have found
        it already); False (and backoff) until the server knows it."""
        job_id, reason = self._job.resolve(self._client)
        if job_id is not None:
            log.info("kuae Reporter: Slurm job %s is job %d", self.slurm_job_id, job_id)
            return True
        if not self._lookup_logged:
            self._lookup_logged = True
            log.warning(
                "kuae Reporter: job with Slurm id %s in cluster %s not found (%s); retrying",
                self.slurm_job_id,
                self.cluster,
                reason,
            )
        self._outbox.back_off(self._backoff, reason, flushing=False)
        return False

    def _report_drops(self) -> None:
        dropped = self.dropped
        if dropped > self._logged_dropped:
            log.warning(
                "kuae Reporter: %d sample(s) dropped so far (buffer or spool full)", dropped
            )
            self._logged_dropped = dropped
