"""Every write to jobs: create/update, step-metric intake, checkpoints."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, F, Q, Sum
from django.db.models.functions import TruncHour
from django.utils import timezone

from apps.common.bulk import insert_ignore, upsert_merge
from apps.common.errors import BatchError
from apps.common.retention import delete_in_batches, prune_before
from apps.fleet.models import Cluster, Node
from apps.fleet.services import nodes_seen
from apps.fleet.validators import nodes_named
from apps.jobs.choices import ENDED_STATUSES, JobStatus
from apps.jobs.extremes import BUCKET_SECONDS, bucket_extremes, bucket_start
from apps.jobs.intake import MetricSample
from apps.jobs.models import (
    Checkpoint,
    Job,
    JobMetric,
    JobMetricHour,
    JobPhase,
    NodeStepMetric,
    RankStack,
)
from apps.jobs.peaks import job_models_forget
from apps.jobs.phase_intake import PhaseItem
from apps.jobs.readers import job_progressed

JOB_FIELDS = (
    "name",
    "external_id",
    "model_name",
    "n_params",
    "flops_per_token",
    "gpu_count",
    "status",
    "started_at",
    "ended_at",
    "restart_count",
)


def _check_times(job: Job) -> None:
    if job.started_at and job.ended_at and job.ended_at < job.started_at:
        raise ValidationError({"ended_at": ["is before started_at"]})
    if job.status == JobStatus.RUNNING and job.started_at is None:
        job.started_at = timezone.now()


def job_by_external_id(*, cluster: Cluster, external_id: str) -> Job | None:
    """The newest job of the cluster with this scheduler id, or None."""
    return Job.objects.filter(cluster=cluster, external_id=external_id).order_by("-id").first()


@transaction.atomic
def job_create(*, cluster: Cluster, nodes: Sequence[Node] = (), **fields: Any) -> tuple[Job, bool]:
    """Create a job; with an `external_id` already known in the cluster, update that one.

    Returns (job, created) so a launcher can re-post its registration safely.
    """
    external_id = fields.get("external_id") or ""
    if external_id:  # Slurm reuses ids: the newest job with it (docs/integrations.md, 4. Slurm)
        existing = job_by_external_id(cluster=cluster, external_id=external_id)
        if existing is not None:
            return job_update(job=existing, nodes=nodes or None, **fields), False
    job = Job(cluster=cluster, **{k: v for k, v in fields.items() if k in JOB_FIELDS})
    _check_times(job)
    job.save()
    if nodes:
        job.nodes.set(nodes)
    return job, True


@transaction.atomic
def job_update(*, job: Job, nodes: Sequence[Node] | None = None, **fields: Any) -> Job:
    """Change any of a job's fields (and its nodes)."""
    for key, value in fields.items():
        if key in JOB_FIELDS:
            setattr(job, key, value)
    if job.status in ENDED_STATUSES and job.ended_at is None and "ended_at" not in fields:
        job.ended_at = timezone.now()
    _check_times(job)
    if "external_id" in fields:
        _check_external_id_free(job)
    job.save()
    if nodes is not None:
        job.nodes.set(nodes)
        job_models_forget([job.pk])  # its MFU's peak is read again (docs/formulas.md, MFU)
    return job


def _check_external_id_free(job: Job) -> None:
    """A job's scheduler id is one job's in its cluster (with the same submit time): taking
    another job's is a 400 naming `external_id`, not the database's unique constraint."""
    if not job.external_id:
        return
    others = Job.objects.filter(cluster_id=job.cluster_id, external_id=job.external_id)
    if job.submitted_at is None:
        others = others.filter(submitted_at__isnull=True)
    else:
        others = others.filter(submitted_at=job.submitted_at)
    if others.exclude(pk=job.pk).exists():
        raise ValidationError({"external_id": [f"is another job's in cluster {job.cluster.name}"]})


@transaction.atomic
def job_phases_record(*, job: Job, phases: Sequence[PhaseItem]) -> int:
    """Store a validated batch of phases, all or nothing (docs/agent.md, Phases). A phase is
    identified by (job, name, start): one sent again updates its `end`, `step` and `node`
    (within a batch the last one wins). A node must be of the job's cluster: an unknown one
    rejects the whole batch, naming `phases[i].node`. Returns the number of phases."""
    hostnames = {p.node for p in phases if p.node is not None}
    node_ids: dict[str, int] = {}
    if hostnames:
        named = nodes_named(cluster_id=job.cluster_id, hostnames=hostnames)
        node_ids = {hostname: node.pk for hostname, node in named.nodes.items()}
        unknown = [
            f"phases[{i}].node"
            for i, p in enumerate(phases)
            if p.node is not None and p.node not in node_ids
        ]
        if unknown:
            raise BatchError(
                {key: [f"unknown node in cluster {job.cluster.name}"] for key in unknown[:100]}
            )
    rows = {
        (p.name, p.start): JobPhase(
            job_id=job.pk,
            name=p.name,
            start=p.start,
            end=p.end,
            node_id=node_ids.get(p.node) if p.node is not None else None,
            step=p.step,
        )
        for p in phases
    }
    JobPhase.objects.bulk_create(
        list(rows.values()),
        batch_size=1000,
        update_conflicts=True,
        unique_fields=["job", "name", "start"],
        update_fields=["end", "step", "node"],
    )
    job_progressed(job.pk)  # a restart or a restore: the road back (docs/incidents.md)
    return len(phases)


@transaction.atomic
def job_metrics_ingest(*, job: Job, samples: Sequence[MetricSample]) -> int:
    """Store a validated batch of step samples, all or nothing; duplicates are skipped.

    Job-wide samples (no node) go to JobMetric, per-node timings to NodeStepMetric. Node
    names must belong to the job's cluster: an unknown one rejects the whole batch.
    """
    hostnames = {s.node for s in samples if s.node is not None}
    node_ids: dict[str, int] = {}
    if hostnames:
        named = nodes_named(cluster_id=job.cluster_id, hostnames=hostnames)
        node_ids = {hostname: node.pk for hostname, node in named.nodes.items()}
        unknown = [
            f"samples[{i}].node"
            for i, s in enumerate(samples)
            if s.node is not None and s.node not in node_ids
        ]
        if unknown:
            raise BatchError(
                {key: [f"unknown node in cluster {job.cluster.name}"] for key in unknown[:100]}
            )
    wide = [s for s in samples if s.node is None]
    per_node = [s for s in samples if s.node is not None]
    if wide:
        # One batch of a job at a time: its hourly sums and extremes are recomputed from
        # what is stored, which must include any batch committed concurrently.
        list(Job.objects.select_for_update().filter(pk=job.pk).values_list("pk"))
        insert_ignore(
            JobMetric._meta.db_table,
            (
                "job_id",
                "ts",
                "step",
                "step_time_s",
                "tokens_per_s",
                "loss",
                "grad_norm",
                "nonfinite",
            ),
            (
                (
                    job.pk,
                    s.ts,
                    s.step,
                    s.step_time_s,
                    s.tokens_per_s,
                    _finite(s.loss),
                    _finite(s.grad_norm),
                    s.nonfinite(),
                )
                for s in wide
            ),
        )
        _mark_extremes(job, wide)
        job_hours_refresh(job_id=job.pk, times=[s.ts for s in wide])
        newest = max(wide, key=lambda s: s.ts)
        Job.objects.filter(pk=job.pk).exclude(last_metric_at__gt=newest.ts).update(
            last_metric_at=newest.ts,
            last_step=newest.step,
            last_step_time_s=newest.step_time_s,
            last_tokens_per_s=newest.tokens_per_s,
        )
    if per_node:
        insert_ignore(
            NodeStepMetric._meta.db_table,
            ("job_id", "node_id", "ts", "step", "step_time_s", "compute_s"),
            (
                (job.pk, node_ids[s.node], s.ts, s.step, s.step_time_s, s.compute_s)
                for s in per_node
                if s.node is not None
            ),
        )
        nodes_seen(node_ids=sorted(set(node_ids.values())))
    if samples:
        _progress_record(job, samples)
    return len(samples)


def _progress_record(job: Job, samples: Sequence[MetricSample]) -> None:
    """Move the job's progress to this batch's highest step, stamped with the first sample
    that reached it — unless the job already reached a higher step, or this one earlier.
    One conditional update, so batches arriving concurrently or out of order agree. A batch
    whose steps advance below the highest (a restarted run redoing steps) moves only the
    progress's time forward."""
    top = max(s.step for s in samples)
    first = min(s.ts for s in samples if s.step == top)
    moved = (
        Job.objects.filter(pk=job.pk)
        .filter(
            Q(progress_step__isnull=True)
            | Q(progress_step__lt=top)
            | Q(progress_step=top, progress_at__gt=first)
        )
        .update(progress_step=top, progress_at=first)
    )
    stepping = top > min(s.step for s in samples) or (
        job.last_step is not None and top > job.last_step
    )
    if not moved and stepping:
        # A run restarted from its checkpoint redoes steps below its highest: it steps, so
        # it is not hung (docs/checks.md, job_hang); its highest step stays.
        Job.objects.filter(pk=job.pk, progress_at__lt=first).update(progress_at=first)
    job_progressed(job.pk)  # an interruption the job outlived recovers (docs/incidents.md)


def job_hours_refresh(*, job_id: int, times: Sequence[dt.datetime]) -> None:
    """Recompute the job's hourly sums (JobMetricHour) for every hour holding one of `times`,
    from the stored samples."""
    hours = sorted({t.replace(minute=0, second=0, microsecond=0) for t in times})
    if not hours:
        return
    rows = (
        JobMetric.objects.filter(
            job_id=job_id,
            ts__gte=hours[0],
            ts__lt=hours[-1] + dt.timedelta(hours=1),
            step_time_s__gt=0,
        )
        .annotate(hour=TruncHour("ts"))
        .values("hour")
        .annotate(
            n=Count("id"),
            step_s_sum=Sum("step_time_s"),
            tps_step_sum=Sum(F("tokens_per_s") * F("step_time_s")),
        )
        .values_list("hour", "n", "step_s_sum", "tps_step_sum")
    )
    upsert_merge(
        JobMetricHour._meta.db_table,
        ("job_id", "hour"),
        {"n": "replace", "step_s_sum": "replace", "tps_step_sum": "replace"},
        [(job_id, *row) for row in rows],
    )


def _mark_extremes(job: Job, wide: Sequence[MetricSample]) -> None:
    """Re-mark the min/max-throughput sample of each 5-minute bucket the batch touches."""
    lo = bucket_start(min(s.ts for s in wide))
    hi = bucket_start(max(s.ts for s in wide)) + dt.timedelta(seconds=BUCKET_SECONDS)
    flagged = JobMetric.objects.filter(job=job, extreme=True, ts__gte=lo, ts__lt=hi)
    keep = bucket_extremes(
        [
            *flagged.values_list("ts", "tokens_per_s"),
            # A job-wide sample always has a rate (the intake requires it without `node`).
            *((s.ts, s.tokens_per_s) for s in wide if s.tokens_per_s is not None),
        ]
    )
    flagged.update(extreme=False)
    ordered = sorted(keep)
    for i in range(0, len(ordered), 2000):
        JobMetric.objects.filter(job=job, ts__in=ordered[i : i + 2000]).update(extreme=True)


def _finite(value: float | None) -> float | None:
    return value if value is not None and value == value and abs(value) != float("inf") else None


@transaction.atomic
def checkpoint_record(
    *, job: Job, step: int, saved_at: dt.datetime, blocking_s: float, size_bytes: int | None = None
) -> tuple[Checkpoint, bool]:
    """Record a checkpoint once per (job, saved_at); returns (checkpoint, created)."""
    checkpoint, created = Checkpoint.objects.get_or_create(
        job=job,
        saved_at=saved_at,
        defaults={"step": step, "blocking_s": blocking_s, "size_bytes": size_bytes},
    )
    if created:
        Job.objects.filter(pk=job.pk).exclude(last_checkpoint_at__gt=saved_at).update(
            last_checkpoint_at=saved_at
        )
    return checkpoint, created


@transaction.atomic
def checkpoints_record_bulk(
    *, job: Job, items: Sequence[tuple[int, dt.datetime, float, int | None]]
) -> int:
    """Record many checkpoints (step, saved_at, blocking_s, size_bytes) at once; duplicates
    by (job, saved_at) are skipped. Returns how many were new."""
    if not items:
        return 0
    inserted = insert_ignore(
        Checkpoint._meta.db_table,
        ("job_id", "step", "saved_at", "blocking_s", "size_bytes"),
        ((job.pk, *item) for item in items),
    )
    newest = max(item[1] for item in items)
    Job.objects.filter(pk=job.pk).exclude(last_checkpoint_at__gt=newest).update(
        last_checkpoint_at=newest
    )
    return inserted


def rank_stacks_prune() -> int:
    """Delete the stored stacks no rank's newest report points at any more (a rank keeps
    only its newest stack, so older ones are read by nothing); returns how many went."""
    return delete_in_batches(RankStack.objects.filter(ranks__isnull=True))


def job_metrics_prune(*, older_than_days: int, now: dt.datetime | None = None) -> int:
    """Delete step samples (job-wide and per node) older than the given age — on PostgreSQL
    by dropping whole days' partitions; jobs, checkpoints and their denormalised latest
    values stay."""
    cutoff = (now or timezone.now()) - dt.timedelta(days=older_than_days)
    return prune_before(JobMetric, "ts", cutoff) + prune_before(NodeStepMetric, "ts", cutoff)
