"""What several checks load for one cluster, in a few set-based queries; what one check
alone needs is loaded beside it, in its plug-in module (docs/checks.md, Writing a check)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import orjson
from django.db.models import (
    Case,
    CharField,
    Exists,
    ExpressionWrapper,
    Field,
    OuterRef,
    Q,
    QuerySet,
    Value,
    When,
)
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Concat

from apps.common.dbfuncs import Epoch, JsonNumber, from_epoch
from apps.fleet.choices import NodeState
from apps.fleet.models import GPU, Cluster, Node
from apps.health.blast import KINDS, Place
from apps.health.choices import ResultStatus, RunStatus
from apps.health.detectors import GpuLatest, NodeGpus
from apps.health.models import CheckResult, CheckRun
from apps.jobs.models import Job
from apps.jobs.selectors import running_jobs as jobs_running

# The first run of an event-driven check looks this far back.
FIRST_WINDOW = dt.timedelta(minutes=10)
IN_SERVICE = (NodeState.HEALTHY, NodeState.SUSPECT)


def places(cluster: Cluster) -> dict[str, Place]:
    """hostname → where it sits, for the cluster's nodes with a switch, PDU or NVLink
    domain (docs/checks.md, Blast radius)."""
    return {
        h: Place(switch, pdu, nvl)
        for h, switch, pdu, nvl in Node.objects.filter(cluster=cluster)
        .exclude(switch="", pdu="", nvlink_domain="")
        .values_list("hostname", *KINDS)
    }


def running_jobs(cluster: Cluster) -> list[Job]:
    """The cluster's running jobs, largest first."""
    return jobs_running(cluster_id=cluster.pk)


def gpus_latest(cluster: Cluster, keys: tuple[str, ...] = ()) -> list[GpuLatest]:
    """Every GPU's latest values of the metrics named, and when they arrived. The values are
    read out of the JSON in SQL as text and the times as Unix seconds: at 100,000 GPUs,
    shipping each GPU's whole document or parsing each timestamp's text took most of a
    check's time."""
    return _latest(cluster, GPU.objects.filter(node__cluster=cluster), keys)


def _latest(cluster: Cluster, gpus: QuerySet[GPU], keys: tuple[str, ...]) -> list[GpuLatest]:
    """`gpus_latest` of the GPUs `gpus` selects."""
    columns = [KT(f"metrics__{k}") for k in keys]
    rows = gpus.values_list(
        "node__hostname",
        "index",
        "model",
        Epoch("updated_at"),
        Epoch("probe_at"),
        "source",
        *columns,
    )
    return [
        GpuLatest(
            hostname,
            index,
            # docs/pages.md, Vendors and models: a blank model is the cluster's
            cluster.model_of(model),
            {k: json_value(v) for k, v in zip(keys, values, strict=True) if v is not None},
            from_epoch(updated) if updated is not None else None,
            from_epoch(probe) if probe is not None else None,
            source,
        )
        for hostname, index, model, updated, probe, source, *values in rows
    ]


def json_text(key: str) -> ExpressionWrapper:
    """A GPU's metric `key` as `gpus_latest` reads it (`json_value` makes it the value), to
    compare with values read so: text on PostgreSQL, the JSON's own number on SQLite — so
    equal here means equal in Python too (compared as they are, not as text)."""
    return ExpressionWrapper(KT(f"metrics__{key}"), output_field=Field())


def gpu_target_sql() -> Concat:
    """A GPU row's result target (`gpu:HOST/INDEX`, as `findings.gpu_target` makes it) in
    SQL."""
    return Concat(
        Value("gpu:"),
        "node__hostname",
        Value("/"),
        Cast("index", CharField()),
        output_field=CharField(),
    )


@dataclass(frozen=True)
class Candidates:
    """What a check's run must judge of the cluster's GPUs (docs/checks.md, Candidates):
    those not `unchanged`, loaded; and how many were, counted only (each would pass
    again with the message its stored pass already has, so nothing of it is written)."""

    gpus: list[GpuLatest]
    unchanged: int


@dataclass(frozen=True)
class NodeCandidates:
    """`Candidates` of a check that judges nodes: those loaded, and how many were not."""

    nodes: list[NodeGpus]
    unchanged: int


def gpus_candidates(
    cluster: Cluster,
    kind: str,
    keys: tuple[str, ...],
    *,
    passing: Q,
    message: str,
    fresh_after: dt.datetime | None = None,
    named: Collection[str] = (),
    skip_hosts: Collection[str] = (),
    among: Q | None = None,
) -> Candidates:
    """The cluster's GPUs `kind` must judge, chosen in SQL: every GPU but those whose values
    meet `passing` (a condition on the annotations `v_<key>`, each key's value as a JSON
    number, else NULL, and `t_<key>`, its value as `gpus_latest` reads it) and whose stored
    result of `kind` is a pass with `message` — they would pass again, unchanged. A GPU
    whose target is in `named` (one an event names) is always judged; with `fresh_after`,
    GPUs whose values are older are neither judged nor counted (the detector skips them);
    with `among` (a condition on the same annotations), so are the GPUs that do not meet
    it (those the detector gives no finding). The unchanged ones on `skip_hosts` (nodes under
    maintenance) are not counted: their findings would have been dropped. Two statements,
    whatever the number of healthy GPUs: the candidates' rows, and a count of the GPUs in
    scope (all of them unless `among`; the unchanged are those not loaded).

    The detector then judges the candidates as it judged every GPU: a GPU past a threshold,
    one whose stored result is not that pass (a warning to clear, a streak to end), one with
    no result yet (a new GPU), one whose values it cannot compare in SQL (text, missing)."""
    scope = GPU.objects.filter(node__cluster=cluster)
    if fresh_after is not None:
        scope = scope.filter(updated_at__gte=fresh_after)
    gpus = _unchanged(
        cluster, scope, kind, keys, passing=passing, message=message, named=named, among=among
    )
    judged = _latest(cluster, gpus.filter(Q(unchanged=False)), keys)
    # The unchanged are the GPUs in scope that were not loaded: counting them so needs
    # neither the stored results nor a target per GPU, only `among`'s values.
    if among is not None:
        scope = _values(scope, keys).filter(among)
    if skip_hosts:
        scope = scope.exclude(node__hostname__in=list(skip_hosts))
    skipped = frozenset(skip_hosts)
    return Candidates(judged, scope.count() - sum(g.node not in skipped for g in judged))


def _unchanged(
    cluster: Cluster,
    gpus: QuerySet[GPU],
    kind: str,
    keys: tuple[str, ...],
    *,
    passing: Q,
    message: str,
    named: Collection[str] = (),
    among: Q | None = None,
) -> QuerySet[GPU]:
    """`gpus` annotated with `target`, `v_<key>`, `t_<key>` and `unchanged`, and with
    `among`, only those that meet it (`gpus_candidates`)."""
    stored = CheckResult.objects.filter(
        cluster=cluster,
        kind=kind,
        target=OuterRef("target"),
        status=ResultStatus.PASS,
        message=message,
    )
    same = passing & Q(Exists(stored))
    if named:
        same &= ~Q(target__in=list(named))
    gpus = _values(gpus, keys).annotate(target=gpu_target_sql())
    if among is not None:
        gpus = gpus.filter(among)
    return gpus.annotate(unchanged=Case(When(same, then=Value(True)), default=Value(False)))


def _values(gpus: QuerySet[GPU], keys: tuple[str, ...]) -> QuerySet[GPU]:
    """`gpus` annotated with `v_<key>` and `t_<key>` (`gpus_candidates`)."""
    return gpus.annotate(
        **{f"v_{k}": JsonNumber("metrics", k) for k in keys},
        **{f"t_{k}": json_text(k) for k in keys},
    )


# A pull with thresholds in the query reads the GPUs of at most this many nodes by name
# (a regex of their hostnames); more, and it reads every GPU (a first run, a fleet-wide
# change of thresholds): a regex of thousands of names is slower than the whole answer.
READ_NODES_MAX = 100


def hosts_to_read(
    cluster: Cluster, kind: str, keys: tuple[str, ...], *, passing: Q, message: str
) -> frozenset[str] | None:
    """The nodes whose GPUs a pull must read whatever Prometheus says of their values
    (docs/integrations.md, 2d: thresholds in the query): those with a GPU that
    `gpus_candidates` would judge from its stored values and result alone — one whose
    stored values do not meet `passing` or whose stored result is not that pass (or none
    yet). A GPU not among them is left unread unless a value of it is past a threshold in
    Prometheus; its stored values, under the limits, then give the verdict the current
    ones would (the pass it has). None when more than READ_NODES_MAX nodes, or every node
    (a first run): read every GPU."""
    gpus = GPU.objects.filter(node__cluster=cluster)
    gpus = _unchanged(cluster, gpus, kind, keys, passing=passing, message=message)
    hosts = gpus.filter(Q(unchanged=False)).values_list("node__hostname", flat=True).distinct()
    picked = list(hosts[: READ_NODES_MAX + 1])
    if len(picked) > READ_NODES_MAX:
        return None
    nodes = Node.objects.filter(cluster=cluster, gpus__isnull=False).distinct().count()
    return None if picked and len(picked) >= nodes else frozenset(picked)


def json_value(value: object) -> Any:
    """A JSON value read as text (PostgreSQL's `->>`: `62`, `1834.2`, `true`, a string
    unquoted) or as itself (SQLite) → the value the document holds (a number: the intake
    keeps numbers only)."""
    if not isinstance(value, str):
        return value
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        return value  # a string


def previous_run_start(cluster: Cluster, kind: str, now: dt.datetime) -> dt.datetime:
    """When the previous finished run of `kind` began (events after it are new), else a
    short window back."""
    last = (
        CheckRun.objects.filter(
            cluster=cluster, kind=kind, status=RunStatus.DONE, started_at__lt=now
        )
        .order_by("-started_at")
        .values_list("started_at", flat=True)
        .first()
    )
    return last or now - FIRST_WINDOW


def result_counts(cluster: Cluster, kind: str, key: str) -> dict[str, int]:
    """target → the positive count stored under `key` in the details of `kind`'s results."""
    rows = CheckResult.objects.filter(cluster=cluster, kind=kind).filter(
        **{f"details__{key}__gt": 0}
    )
    return {
        target: int(details[key])
        for target, details in rows.values_list("target", "details")
        if isinstance(details.get(key), int | float)
    }


def result_times(cluster: Cluster, kind: str, key: str) -> dict[str, list[dt.datetime]]:
    """target → the times stored as a list under `key` in the details of `kind`'s results
    that hold one (a port's warnings within the hour)."""
    rows = CheckResult.objects.filter(cluster=cluster, kind=kind, details__has_key=key)
    out: dict[str, list[dt.datetime]] = {}
    for target, details in rows.values_list("target", "details"):
        times = [dt.datetime.fromisoformat(t) for t in details.get(key) or () if isinstance(t, str)]
        if times:
            out[target] = times
    return out


def job_of_node(jobs: list[Job]) -> dict[str, int]:
    """hostname → the largest running job on it."""
    size = {job.pk: job.gpu_count for job in jobs}
    out: dict[str, int] = {}
    for job_id, hostname in Job.nodes.through.objects.filter(job__in=jobs).values_list(
        "job_id", "node__hostname"
    ):
        if hostname not in out or size[job_id] > size[out[hostname]]:
            out[hostname] = job_id
    return out
