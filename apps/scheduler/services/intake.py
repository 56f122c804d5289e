"""Slurm job records in (docs/integrations.md, 4. Slurm): `POST ingest/slurm/`, `import_slurm`
and the live sync all come here. The records are parsed (`slurm_jobs`), each joined to its job
(`slurm_merge`), the jobs written in bulk, and the NODE_FAIL attempts open incidents
interrupting their jobs: one per node each request names, at most `SLURM_INCIDENTS`."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Sequence

from django.db import transaction
from django.utils import timezone

from apps.common.bulk import among, delete_among, insert_ignore, update_many, upsert_merge
from apps.common.errors import BatchError
from apps.common.limits import SLURM_INCIDENTS
from apps.fleet.models import Cluster, Node
from apps.fleet.services import nodes_claim
from apps.incidents.choices import TITLE_LENGTH, Category, Severity, Source
from apps.incidents.models import Incident
from apps.incidents.services import incident_open
from apps.jobs.models import Job, JobAttempt
from apps.jobs.readers import jobs_restarted
from apps.scheduler.slurm_jobs import STATES, SlurmJob, parse_slurm
from apps.scheduler.slurm_merge import UPDATED_FIELDS, Attempt, JobState, apply, job_for


@transaction.atomic
def slurm_ingest(*, cluster_name: str | None, payload: object) -> dict[str, int]:
    """Apply Slurm job records of any supported shape (`sacct`/`squeue --json`, slurmrestd
    `slurm`/`slurmdb` jobs; docs/integrations.md, 4. Slurm), all or nothing. Answers the jobs
    `created` and `updated`, and of the NODE_FAIL attempts not seen before: the `incidents`
    opened (`node_unreachable`, interrupting a job), the records `folded` into another record's
    incident of this request (they name the same node), and the records `skipped` past the
    bound on incidents one request opens (docs/integrations.md, 4. Slurm)."""
    records = parse_slurm(payload)
    by_cluster: dict[str, list[SlurmJob]] = {}
    errors: dict[str, list[str]] = {}
    for i, record in enumerate(records):
        name = cluster_name or record.cluster
        if not name:
            errors[f"jobs[{i}].cluster"] = ["no cluster: pass ?cluster=NAME"]
        by_cluster.setdefault(name, []).append(record)
    clusters = {c.name: c for c in Cluster.objects.filter(name__in=list(by_cluster))}
    for name in by_cluster:
        if name and name not in clusters:
            errors["cluster"] = [f"unknown cluster {name[:80]!r}"]
    if errors:
        raise BatchError(errors)
    counts = dict.fromkeys(("created", "updated", "incidents", "folded", "skipped"), 0)
    for name, items in by_cluster.items():
        cluster = clusters[name]
        placed = slurm_jobs_upsert(cluster=cluster, records=items)
        for _, created, _ in placed:
            counts["created" if created else "updated"] += 1
        failed = [
            (pk, r)
            for (pk, _, known), r in zip(placed, items, strict=True)
            if r.node_fail and not known
        ]
        if failed:
            opened = _node_fail_incidents(
                cluster, failed, room=SLURM_INCIDENTS - counts["incidents"]
            )
            for key, value in opened.items():
                counts[key] += value
    return counts


def _node_fail_fingerprint(cluster: Cluster, record: SlurmJob) -> str:
    """One interruption per attempt: the job id and the attempt's start (its key if it
    has none) — not `restart_cnt`, which Slurm 22.05's accounting does not report."""
    at = record.started_at
    text = f"slurm:{cluster.name}:{record.job_id}:{int(at.timestamp()) if at else record.key}"
    return text if len(text) <= 128 else "slurm:" + hashlib.sha256(text.encode()).hexdigest()


_Failed = tuple[str, int, SlurmJob]  # (fingerprint, job id, record)
_LATE = dt.datetime.max.replace(tzinfo=dt.UTC)


def _blamed(record: SlurmJob) -> list[str]:
    """The nodes a NODE_FAIL record blames: `failed_node`, else every node of the job."""
    return record.failed_nodes or record.hostnames


def _by_node(todo: Sequence[_Failed]) -> list[list[_Failed]]:
    """The records grouped so that records naming a common node are one group (a record
    naming none is a group of its own); each group in the order its attempts failed, the
    groups in the order of their first failure."""
    parent: dict[str, str] = {}

    def root(name: str) -> str:
        while (up := parent.setdefault(name, name)) != name:
            parent[name] = parent.setdefault(up, up)
            name = up
        return name

    for _, _, record in todo:
        names = _blamed(record)
        if names:
            first = root(names[0])
            for name in names[1:]:
                if (other := root(name)) != first:
                    parent[other] = first
    groups: dict[str, list[_Failed]] = {}
    for item in todo:
        names = _blamed(item[2])
        groups.setdefault(root(names[0]) if names else "\0" + item[0], []).append(item)

    def order(item: _Failed) -> tuple[dt.datetime, str, int]:
        record = item[2]
        return (record.ended_at or _LATE, record.job_id, record.key)

    return sorted((sorted(g, key=order) for g in groups.values()), key=lambda g: order(g[0]))


def _node_fail_incidents(
    cluster: Cluster, failed: Sequence[tuple[int, SlurmJob]], *, room: int
) -> dict[str, int]:
    """Open an incident for the NODE_FAIL attempts not yet opened (three queries, then one
    incident each): the records naming a common node fold into one incident (the first
    attempt's job, every node they name), and at most `room` incidents open — the records of
    the groups past it are `skipped`. An incident opened before attempts were told apart
    (fingerprint by `restart_cnt`) counts as this attempt's."""
    keys = [(_node_fail_fingerprint(cluster, r), pk, r) for pk, r in failed]
    legacy = {
        fp: f"slurm:{cluster.name}:{r.job_id}:{r.restart_cnt}"
        for fp, _, r in keys
        if r.restart_cnt is not None
    }
    seen = set(
        Incident.objects.filter(
            cluster=cluster, fingerprint__in=[fp for fp, _, _ in keys] + list(legacy.values())
        ).values_list("fingerprint", flat=True)
    )
    todo: list[_Failed] = []
    for fp, pk, r in keys:
        if fp not in seen and legacy.get(fp) not in seen:  # nor the same attempt twice
            seen.add(fp)
            todo.append((fp, pk, r))
    counts = {"incidents": 0, "folded": 0, "skipped": 0}
    groups = _by_node(todo)
    for group in groups[max(room, 0) :]:
        counts["skipped"] += len(group)
    groups = groups[: max(room, 0)]
    if not groups:
        return counts
    jobs = Job.objects.in_bulk([group[0][1] for group in groups])
    hosts = {h for group in groups for _, _, r in group for h in _blamed(r)}
    nodes = {n.hostname: n for n in Node.objects.filter(cluster=cluster, hostname__in=hosts)}
    for group in groups:
        fingerprint, pk, record = group[0]
        names = list(dict.fromkeys(h for _, _, r in group for h in _blamed(r)))
        failed_at = record.ended_at or timezone.now()
        incident_open(
            cluster=cluster,
            title=_title(group, names),
            category=Category.NODE_UNREACHABLE,
            severity=Severity.SEV2,
            occurred_at=failed_at,
            detected_at=failed_at,
            job=jobs[pk],
            nodes=[nodes[h] for h in names if h in nodes],
            interrupts_job=True,
            source=Source.SLURM,
            fingerprint=fingerprint,
            description=_description(group),
        )
        counts["incidents"] += 1
        counts["folded"] += len(group) - 1
    return counts


def _title(group: Sequence[_Failed], names: Sequence[str]) -> str:
    shown = ", ".join(names[:3]) + (" …" if len(names) > 3 else "")
    if len(group) == 1:
        title = f"Slurm NODE_FAIL for job {group[0][2].job_id} ({shown})"
    else:
        title = f"Slurm NODE_FAIL on {shown} ({len(group):,} job attempts)"
    return title if len(title) <= TITLE_LENGTH else title[: TITLE_LENGTH - 1] + "…"


_LISTED = 20  # jobs a folded incident's description names


def _description(group: Sequence[_Failed]) -> str:
    """For an incident that folds several records: which jobs failed with it."""
    if len(group) == 1:
        return ""
    ids = list(dict.fromkeys(r.job_id for _, _, r in group))
    listed = ", ".join(ids[:_LISTED]) + (
        f" and {len(ids) - _LISTED:,} more" if len(ids) > _LISTED else ""
    )
    return (
        f"{len(group):,} NODE_FAIL attempts of one Slurm answer name these nodes: one incident "
        f"for them, interrupting the first failed job (Slurm jobs {listed})."
    )


@transaction.atomic
def slurm_jobs_upsert(
    *, cluster: Cluster, records: Sequence[SlurmJob]
) -> list[tuple[int, bool, bool]]:
    """Create or update jobs from Slurm records (docs/integrations.md, 4. Slurm): a job is (cluster,
    job id, submit time), each record one attempt of it (`slurm_merge`). Nodes named by a record and
    not yet known are registered in the cluster. In bulk: the number of queries does not
    depend on the number of records. Returns, per record, (job id, whether it created it,
    whether its attempt was already stored as NODE_FAIL — its incident is not this call's)."""
    node_ids = _slurm_nodes(cluster, records)
    now = timezone.now()
    candidates = _slurm_known(cluster, sorted({r.job_id for r in records}))
    stored = {id(j) for jobs in candidates.values() for j in jobs}
    placed: dict[int, tuple[JobState, bool]] = {}
    failed_before: dict[int, bool] = {}
    for i in sorted(range(len(records)), key=lambda i: (records[i].job_id, records[i].key)):
        record = records[i]
        jobs = candidates.setdefault(record.job_id, [])
        job = job_for(jobs, record)
        placed[i] = (job or JobState(external_id=record.job_id, hostnames=()), job is None)
        if job is None:
            job = placed[i][0]
            jobs.append(job)
        known = job.attempts.get(record.key)
        failed_before[i] = known is not None and known.state == "NODE_FAIL"
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
    restarted = {j.pk for j in every for a in j.attempts.values() if a.changed and j.pk}
    if restarted:  # a new attempt: an interruption's road back (docs/incidents.md)
        jobs_restarted(sorted(restarted))
    relinked = [j for j in every if j.nodes_changed]
    if relinked:
        through = Job.nodes.through
        delete_among(through._meta.db_table, "job_id", [j.pk for j in relinked])
        insert_ignore(
            through._meta.db_table,
            ("job_id", "node_id"),
            [(j.pk, node_ids[h]) for j in relinked for h in j.hostnames or ()],
        )
    return [(placed[i][0].pk or 0, placed[i][1], failed_before[i]) for i in range(len(records))]


def _slurm_nodes(cluster: Cluster, records: Sequence[SlurmJob]) -> dict[str, int]:
    """hostname → node id for every node the records name, registering new ones through the
    fleet's one rule for intakes (`nodes_claim`: the bounds on new nodes, and never another
    cluster's hostname)."""
    wanted = {h for r in records for h in (*r.hostnames, *r.failed_nodes)}
    return nodes_claim(cluster=cluster, hostnames=wanted, intake="slurm")


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
