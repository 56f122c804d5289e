"""A job's step samples, checkpoints and phases over its life, gaps, restarts and rework
included. Pure."""

from __future__ import annotations

import datetime as dt
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field

from apps.jobs.intake import MetricSample
from apps.jobs.phase_intake import PhaseItem
from apps.simulator.mix import road_timing
from apps.simulator.plan import H100_PEAK_TFLOPS, Interruption, JobPlan


@dataclass(frozen=True)
class CheckpointPlan:
    """A checkpoint save."""

    step: int
    saved_at: dt.datetime
    blocking_s: float


@dataclass
class JobShape:
    """A job's steady-state numbers."""

    tokens_per_s: float
    step_time_s: float
    batch_tokens: float


def shape(job: JobPlan, rng: random.Random, peak: float = H100_PEAK_TFLOPS) -> JobShape:
    """Throughput from the job's MFU (docs/formulas.md, MFU, inverted), a step time of 6–14 s."""
    tps = job.mfu * job.gpu_count * peak * 1e12 / (6 * job.n_params)
    step_time = rng.uniform(6, 14) if job.index else 12.5
    return JobShape(tps, step_time, tps * step_time)


def loss_at(tokens: float, rng: random.Random) -> float:
    """A power-law loss curve with a little noise."""
    return 1.7 + 9.0 * (tokens / 1e9 + 1) ** -0.28 + rng.gauss(0, 0.01)


@dataclass
class Restart:
    """The next attempt after an unexpected interruption, as the step series tells it: the
    step of the checkpoint it restored (None: none had finished by the failure, so the job
    started over from step 0), the highest step reported at or before the failure, and when
    progress first passed it (None: not yet, by the series' end)."""

    item: Interruption
    step: int | None
    reached: int
    caught_up_at: dt.datetime | None = None


@dataclass
class JobSeries:
    """Everything `job_series` draws for one job."""

    samples: list[MetricSample]
    checkpoints: list[CheckpointPlan]
    shape: JobShape
    phases: list[PhaseItem] = field(default_factory=list)
    restarts: list[Restart] = field(default_factory=list)


# Time in the run not spent training (docs/simulator.md, Phases): an evaluation every 2–4
# hours of 3–8 minutes, a short wait for data (20–120 s) about every 8 hours; none starts in
# the last 15 minutes before the series ends, so a running job is not left looking stalled.
EVAL_EVERY_H = (2.0, 4.0)
EVAL_S = (180.0, 480.0)
DATA_WAIT_MEAN_H = 8.0
DATA_WAIT_S = (20.0, 120.0)
QUIET = dt.timedelta(minutes=15)


def _finished(checkpoints: list[CheckpointPlan], at: dt.datetime) -> CheckpointPlan | None:
    """The newest checkpoint whose save had finished by `at` (docs/formulas.md, Weekly
    effective training rate: the rework runs from it)."""
    for c in reversed(checkpoints):
        if c.saved_at + dt.timedelta(seconds=c.blocking_s) <= at:
            return c
    return None


def job_series(
    job: JobPlan,
    *,
    until: dt.datetime,
    interval_s: float,
    seed: int,
    peak: float = H100_PEAK_TFLOPS,
) -> JobSeries:
    """Job-wide samples every `interval_s` from the end of the job's start-up to its end (or
    hang, or `until`), at the job's MFU of `peak`, its GPUs' mean dense BF16 peak; its
    checkpoints; its phases (start-up, evaluations, waits for data, and after each unexpected
    interruption the next attempt's start-up and checkpoint restore); and how each restart
    went. After a restart the step goes back to the restored checkpoint's and climbs again,
    so the steps between it and the failure are done twice (the rework)."""
    rng = random.Random(seed * 100_003 + job.index)
    prng = random.Random(seed * 100_019 + job.index)  # the phases' own draws
    s = shape(job, rng, peak)
    stop = min(x for x in (job.end, job.hang_at, until) if x is not None)
    samples: list[MetricSample] = []
    checkpoints: list[CheckpointPlan] = []
    phases: list[PhaseItem] = []
    restarts: list[Restart] = []
    chasing: list[Restart] = []
    stops = sorted(job.interruptions, key=lambda i: i.at)
    step = 0.0
    high = 0  # the highest step reported so far
    startup = dt.timedelta(seconds=prng.uniform(*road_timing(flagship=job.index == 0).startup))
    t = job.start + startup
    if t <= stop:
        phases.append(PhaseItem("startup", job.start, t, None, None))
    next_ckpt = job.start + dt.timedelta(seconds=job.checkpoint_every_s)
    next_eval = t + dt.timedelta(hours=prng.uniform(*EVAL_EVERY_H))
    next_wait = t + dt.timedelta(hours=prng.expovariate(1 / DATA_WAIT_MEAN_H))
    step_dt = dt.timedelta(seconds=interval_s)
    k = 0
    while t < stop:
        if k < len(stops) and t >= stops[k].at:
            item = stops[k]
            k += 1
            resume = item.recovered_at or stop
            if not item.planned:
                restart = _restart(item, checkpoints, high, stop, phases)
                step = float(restart.step or 0)  # rework: from the last finished checkpoint
                restarts.append(restart)
                chasing.append(restart)
            t = resume
            next_ckpt = max(next_ckpt, t + dt.timedelta(seconds=job.checkpoint_every_s))
            continue
        failing = stops[k].at if k < len(stops) else None
        pause = _pause(t, stop, failing, (next_eval, next_wait), prng, phases, int(step))
        if pause is not None:
            kind, t = pause
            if kind == "eval":
                next_eval = t + dt.timedelta(hours=prng.uniform(*EVAL_EVERY_H))
            else:
                next_wait = t + dt.timedelta(hours=prng.expovariate(1 / DATA_WAIT_MEAN_H))
            continue
        tps = s.tokens_per_s * (1 + rng.gauss(0, 0.015))
        step_time = s.batch_tokens / tps
        step += interval_s / step_time
        loss: float = loss_at(step * s.batch_tokens, rng)
        if (
            k < len(stops)
            and stops[k].category == "silent_data_corruption"
            and stops[k].at - step_dt <= t < stops[k].at
        ):
            loss = math.nan
        samples.append(
            MetricSample(
                ts=t,
                step=int(step),
                step_time_s=round(step_time, 4),
                tokens_per_s=round(tps, 1),
                loss=loss,
                grad_norm=abs(rng.gauss(0.6, 0.15)),
                node=None,
                compute_s=None,
            )
        )
        high = max(high, int(step))
        for restart in [r for r in chasing if int(step) > r.reached]:
            restart.caught_up_at = t
            chasing.remove(restart)
        if t >= next_ckpt:
            checkpoints.append(
                CheckpointPlan(int(step), t, rng.uniform(*job.checkpoint_blocking_s))
            )
            next_ckpt = t + dt.timedelta(seconds=job.checkpoint_every_s)
        t += step_dt
    return JobSeries(samples, checkpoints, s, phases, restarts)


def _restart(
    item: Interruption,
    checkpoints: list[CheckpointPlan],
    high: int,
    stop: dt.datetime,
    phases: list[PhaseItem],
) -> Restart:
    """The next attempt after `item`: the checkpoint it restores and, where they are over by
    `stop`, its phases — `startup` from the restart to the load, `checkpoint_restore` from
    the load to `restored_at` at the checkpoint's step (with no checkpoint, start-up runs
    until training resumes)."""
    ckpt = _finished(checkpoints, item.at)
    restart = Restart(item, ckpt.step if ckpt else None, high)
    begun, loading, restored = item.restarted_at, item.loading_at, item.restored_at
    if begun is None or loading is None or restored is None:
        return restart
    if ckpt is None:
        if restored <= stop:
            phases.append(PhaseItem("startup", begun, restored, None, None))
        return restart
    if loading <= stop:
        phases.append(PhaseItem("startup", begun, loading, None, None))
    if restored <= stop:
        phases.append(PhaseItem("checkpoint_restore", loading, restored, None, ckpt.step))
    return restart


def _pause(
    t: dt.datetime,
    stop: dt.datetime,
    failing: dt.datetime | None,
    due: tuple[dt.datetime, dt.datetime],
    rng: random.Random,
    phases: list[PhaseItem],
    step: int,
) -> tuple[str, dt.datetime] | None:
    """An evaluation or a wait for data due at `t` (`due`: when the next of each is), recorded
    as a phase: (its name, when training goes on), or None when none is due. One that would
    end within QUIET of `stop` is put off (and so, at the series' end, never runs); one the
    next failure (`failing`) interrupts ends there."""
    for name, at, span in (("eval", due[0], EVAL_S), ("data_wait", due[1], DATA_WAIT_S)):
        if t < at:
            continue
        end = t + dt.timedelta(seconds=rng.uniform(*span))
        if end + QUIET > stop:
            return None
        if failing is not None and failing < end:
            end = max(t, failing)
        phases.append(PhaseItem(name, t, end, None, step))
        return name, end
    return None


def node_timings(
    job: JobPlan, hostnames: list[str], last: list[MetricSample], seed: int
) -> Iterator[MetricSample]:
    """Per-node compute times for the job's last samples; the slow node computes 18% longer,
    and in a hung job the node it waits on stopped reporting three samples earlier."""
    rng = random.Random(seed * 7919 + job.index)
    for k, sample in enumerate(last):
        for node in job.nodes:
            if node == job.hang_node and k >= len(last) - 3:
                continue
            factor = 1.18 if node == job.slow_node else 1.0
            compute = sample.step_time_s * 0.82 * factor * (1 + rng.gauss(0, 0.008))
            yield MetricSample(
                ts=sample.ts,
                step=sample.step,
                step_time_s=sample.step_time_s,
                tokens_per_s=None,
                loss=None,
                grad_norm=None,
                node=hostnames[node],
                compute_s=round(compute, 4),
            )
