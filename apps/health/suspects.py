"""The job's nodes ranked by the evidence against them: the job page's suspects, and what a
hang with no culprit rank names instead (docs/checks.md, Ranks). Reads only."""

from __future__ import annotations

import datetime as dt
import statistics
from collections import defaultdict

from apps.health.choices import NOT_PASSING
from apps.health.localise import NodeEvidence, Suspect, rank
from apps.health.models import CheckResult
from apps.jobs.models import Job, NodeStepMetric
from apps.telemetry.models import TelemetryEvent


def _labels(kinds: list[str]) -> list[str]:
    """Check kinds as a person reads them, in the active language (the job page's)."""
    from apps.health.checks import kind_label  # the checks' plug-ins import this module

    return [str(kind_label(kind)) for kind in sorted(set(kinds))]


def job_suspects(*, job: Job, now: dt.datetime) -> list[Suspect]:
    """The job's nodes ranked by evidence (a fixed number of queries)."""
    nodes = list(job.nodes.values_list("pk", "hostname", "state"))
    ids = [pk for pk, _, _ in nodes]
    since = now - dt.timedelta(minutes=30)
    timing: dict[int, list[float]] = defaultdict(list)
    newest: dict[int, dt.datetime] = {}
    for node_id, ts, compute in NodeStepMetric.objects.filter(job=job, ts__gte=since).values_list(
        "node_id", "ts", "compute_s"
    ):
        if compute is not None:
            timing[node_id].append(compute)
        if node_id not in newest or ts > newest[node_id]:
            newest[node_id] = ts
    errors: dict[int, int] = defaultdict(int)
    for node_id in TelemetryEvent.objects.filter(
        node_id__in=ids, recorded_at__gte=now - dt.timedelta(hours=1), kind__in=("xid", "ecc_dbe")
    ).values_list("node_id", flat=True):
        errors[node_id] += 1
    failing: dict[int, list[str]] = defaultdict(list)
    warning: dict[int, list[str]] = defaultdict(list)
    for node_id, kind, status in (
        CheckResult.objects.filter(node_id__in=ids)
        .filter(status__in=NOT_PASSING)
        .values_list("node_id", "kind", "status")
    ):
        (failing if status == "fail" else warning)[node_id].append(kind)
    evidence = [
        NodeEvidence(
            hostname,
            state,
            newest.get(pk),
            statistics.median(timing[pk]) if timing.get(pk) else None,
            errors[pk],
            _labels(failing[pk]),
            _labels(warning[pk]),
        )
        for pk, hostname, state in nodes
    ]
    return rank(evidence, step_time_s=job.last_step_time_s)
