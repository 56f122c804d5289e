"""A job's step samples and checkpoints over its life, gaps and rework included. Pure."""

from __future__ import annotations

import datetime as dt
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass

from apps.jobs.intake import MetricSample
from apps.simulator.plan import H100_PEAK_TFLOPS, JobPlan


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


def job_series(
    job: JobPlan,
    *,
    until: dt.datetime,
    interval_s: float,
    seed: int,
    peak: float = H100_PEAK_TFLOPS,
) -> tuple[list[MetricSample], list[CheckpointPlan], JobShape]:
    """Job-wide samples every `interval_s` from start to end (or hang, or `until`), at the
    job's MFU of `peak`, its GPUs' mean dense BF16 peak."""
    rng = random.Random(seed * 100_003 + job.index)
    s = shape(job, rng, peak)
    stop = min(x for x in (job.end, job.hang_at, until) if x is not None)
    samples: list[MetricSample] = []
    checkpoints: list[CheckpointPlan] = []
    stops = sorted(job.interruptions, key=lambda i: i.at)
    step = 0.0
    last_ckpt_step = 0
    next_ckpt = job.start + dt.timedelta(seconds=job.checkpoint_every_s)
    t = job.start
    step_dt = dt.timedelta(seconds=interval_s)
    k = 0
    while t < stop:
        if k < len(stops) and t >= stops[k].at:
            item = stops[k]
            k += 1
            resume = item.recovered_at or stop
            if not item.planned:
                step = float(last_ckpt_step)  # rework: restart from the last checkpoint
            t = resume
            next_ckpt = max(next_ckpt, t + dt.timedelta(seconds=job.checkpoint_every_s))
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
        if t >= next_ckpt:
            checkpoints.append(
                CheckpointPlan(int(step), t, rng.uniform(*job.checkpoint_blocking_s))
            )
            last_ckpt_step = int(step)
            next_ckpt = t + dt.timedelta(seconds=job.checkpoint_every_s)
        t += step_dt
    return samples, checkpoints, s


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
