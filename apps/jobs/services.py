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

from apps.common.bulk import among, delete_among, insert_ignore, update_many, upsert_merge
from apps.common.errors import BatchError
from apps.common.limits import NEW_NODES
from apps.common.retention import prune_before
from apps.fleet.models import Cluster, Node
from apps.fleet.services import NodeSpec, nodes_register, nodes_seen
from apps.jobs.choices import ENDED_STATUSES, JobStatus
from apps.jobs.extremes import BUCKET_SECONDS, bucket_extremes, bucket_start
from apps.jobs.intake import MetricSample
from apps.jobs.models import (
    Checkpoint,
    Job,
    JobAttempt,
    JobMetric,
    JobMetricHour,
    NodeStepMetric,
)
from apps.jobs.slurm import STATES, SlurmJob
from apps.jobs.slurm_merge import UPDATED_FIELDS, Attempt, JobState, apply, job_for

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
    job.save()
    if nodes is not None:
        job.nodes.set(nodes)
    return job


@transaction.atomic
def job_metrics_ingest(*, job: Job, samples: Sequence[MetricSample]) -> int:
    """Store a validated batch of step samples, all or nothing; duplicates are skipped.

    Job-wide samples (no node) go to JobMetric, per-node timings to NodeStepMetric. Node
    names must belong to the job's cluster: an unknown one rejects the whole batch.
    """
    hostnames = {s.node for s in samples if s.node is not None}
    node_ids: dict[str, int] = {}
    if hostnames:
        node_ids = dict(
            Node.objects.filter(cluster_id=job.cluster_id, hostname__in=hostnames).values_list(
                "hostname", "pk"
            )
        )
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
    One conditional update, so batches arriving concurrently or out of order agree."""
    top = max(s.step for s in samples)
    first = min(s.ts for s in samples if s.step == top)
    Job.objects.filter(pk=job.pk).filter(
        Q(progress_step__isnull=True)
        | Q(progress_step__lt=top)
        | Q(progress_step=top, progress_at__gt=first)
    ).update(progress_step=top, progress_at=first)


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


@transaction.atomic
def slurm_jobs_upsert(*, cluster: Cluster, records: Sequence[SlurmJob]) -> list[tuple[int, bool]]:
    """Create or update jobs from Slurm records (docs/integrations.md, 4. Slurm): a job is (cluster,
    job id, submit time), each record one attempt of it (`slurm_merge`). Nodes named by a record and
    not yet known are registered in the cluster. In bulk: the number of queries does not
    depend on the number of records. Returns, per record, (job id, whether it created it)."""
    node_ids = _slurm_nodes(cluster, records)
    now = timezone.now()
    candidates = _slurm_known(cluster, sorted({r.job_id for r in records}))
    stored = {id(j) for jobs in candidates.values() for j in jobs}
    placed: dict[int, tuple[JobState, bool]] = {}
    for i in sorted(range(len(records)), key=lambda i: (records[i].job_id, records[i].key)):
        record = records[i]
        jobs = candidates.setdefault(record.job_id, [])
        job = job_for(jobs, record)
        placed[i] = (job or JobState(external_id=record.job_id, hostnames=()), job is None)
        if job is None:
            job = placed[i][0]
            jobs.append(job)
        apply(job, record, gpus_per_node=cluster.gpus_per_node, now=now)
    every = [j for jobs in candidates.values() for j in jobs]
    new = [j for j in every if id(j) not in stored]
    changed = [j for j in every if id(j) in stored and j.changed]
    if new and _slurm_insert(cluster, new, now) < len(new):
        changed += new  # some were inserted at the same time by another intake: update them
    update_many(
        Job._meta.db_table,
        ["id"],
        [*UPDATED_FIELDS, "updated_at"],
        [(j.pk, *j.values(), now) for j in changed],
    )
    upsert_merge(
        JobAttempt._meta.db_table,
        ("job_id", "key"),
        dict.fromkeys(("state", "started_at", "ended_at", "hostlist"), "replace"),
        [
            (j.pk, a.key, a.state, a.started_at, a.ended_at, a.hostlist)
            for j in every
            for a in j.attempts.values()
            if a.changed
        ],
    )
    relinked = [j for j in every if j.nodes_changed]
    if relinked:
        through = Job.nodes.through
        delete_among(through._meta.db_table, "job_id", [j.pk for j in relinked])
        insert_ignore(
            through._meta.db_table,
            ("job_id", "node_id"),
            [(j.pk, node_ids[h]) for j in relinked for h in j.hostnames or ()],
        )
    return [(placed[i][0].pk or 0, placed[i][1]) for i in range(len(records))]


def _slurm_nodes(cluster: Cluster, records: Sequence[SlurmJob]) -> dict[str, int]:
    """hostname → node id for every node the records name, registering new ones (within
    the bound on new nodes); a node of another cluster rejects the batch."""
    wanted = {h for r in records for h in (*r.hostnames, *r.failed_nodes)}
    if not wanted:
        return {}
    known = {
        h: (pk, cid)
        for h, pk, cid in among(Node.objects.all(), "hostname", sorted(wanted)).values_list(
            "hostname", "pk", "cluster_id"
        )
    }
    elsewhere = sorted(h for h, (_, cid) in known.items() if cid != cluster.pk)
    if elsewhere:
        raise BatchError({"nodes": [f"already in another cluster: {', '.join(elsewhere[:20])}"]})
    new = sorted(wanted - set(known))
    if len(new) > NEW_NODES:
        raise BatchError(
            {
                "nodes": [
                    f"names {len(new):,} new nodes: past the bound of {NEW_NODES:,} new nodes "
                    "per request (register them in smaller requests)"
                ]
            }
        )
    ids = {h: pk for h, (pk, _) in known.items()}
    if new:
        try:
            registered = nodes_register(cluster=cluster, specs=[NodeSpec(hostname=h) for h in new])
        except ValidationError as exc:  # registered meanwhile in another cluster
            raise BatchError({"nodes": exc.messages}) from exc
        ids.update((node.hostname, node.pk) for node in registered)
    return ids


def _slurm_known(cluster: Cluster, external_ids: Sequence[str]) -> dict[str, list[JobState]]:
    """The cluster's jobs with these ids, oldest first, with their attempts and nodes:
    three queries, however many."""
    out: dict[str, list[JobState]] = {}
    by_pk: dict[int, JobState] = {}
    rows = (
        among(Job.objects.filter(cluster=cluster), "external_id", external_ids)
        .order_by("pk")
        .values_list(
            "pk",
            "external_id",
            "name",
            "submitted_at",
            "created_at",
            "status",
            "started_at",
            "ended_at",
            "gpu_count",
            "restart_count",
            "array_job_id",
            "array_task_id",
        )
    )
    for row in rows:
        job = JobState(
            pk=row[0],
            external_id=row[1],
            name=row[2],
            submitted_at=row[3],
            created_at=row[4],
            status=row[5],
            started_at=row[6],
            ended_at=row[7],
            gpu_count=row[8],
            restart_count=row[9],
            array_job_id=row[10],
            array_task_id=row[11],
            hostnames=(),
        )
        out.setdefault(job.external_id, []).append(job)
        by_pk[row[0]] = job
    if not by_pk:
        return out
    attempts = among(JobAttempt.objects.all(), "job_id", list(by_pk)).values_list(
        "job_id", "key", "state", "started_at", "ended_at", "hostlist"
    )
    for job_id, key, state, started, ended, hostlist in attempts:
        by_pk[job_id].attempts[key] = Attempt(
            key=key,
            state=state,
            status=STATES.get(state, "pending"),
            started_at=started,
            ended_at=ended,
            hostlist=hostlist,
        )
    links = (
        among(Job.nodes.through.objects.all(), "job_id", list(by_pk))
        .order_by("node__hostname")
        .values_list("job_id", "node__hostname")
    )
    hostnames: dict[int, list[str]] = {}
    for job_id, hostname in links:
        hostnames.setdefault(job_id, []).append(hostname)
    for pk, names in hostnames.items():
        by_pk[pk].hostnames = tuple(names)
    return out


_INSERTED = (
    "cluster_id",
    "external_id",
    "model_name",
    "created_at",
    "updated_at",
    *UPDATED_FIELDS,
)


def _slurm_insert(cluster: Cluster, jobs: Sequence[JobState], now: dt.datetime) -> int:
    """Insert new jobs (a job inserted meanwhile by another intake is skipped) and set their
    ids; returns how many this call inserted."""
    inserted = insert_ignore(
        Job._meta.db_table,
        _INSERTED,
        [(cluster.pk, j.external_id, "", now, now, *j.values()) for j in jobs],
    )
    ids = {
        (external_id, submitted): pk
        for pk, external_id, submitted in among(
            Job.objects.filter(cluster=cluster),
            "external_id",
            sorted({j.external_id for j in jobs}),
        ).values_list("pk", "external_id", "submitted_at")
    }
    for job in jobs:
        job.pk = ids[(job.external_id, job.submitted_at)]
    return inserted


def job_metrics_prune(*, older_than_days: int, now: dt.datetime | None = None) -> int:
    """Delete step samples (job-wide and per node) older than the given age — on PostgreSQL
    by dropping whole days' partitions; jobs, checkpoints and their denormalised latest
    values stay."""
    cutoff = (now or timezone.now()) - dt.timedelta(days=older_than_days)
    return prune_before(JobMetric, "ts", cutoff) + prune_before(NodeStepMetric, "ts", cutoff)
