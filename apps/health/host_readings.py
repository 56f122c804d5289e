"""The host checks' loader (`host_memory`, `pcie`, `clock`): a cluster's host readings of one
kind with what the previous run judged and kept, and the write that makes this run's
readings the judged ones in the run's own transaction (docs/checks.md, `host_memory`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from django.db.models import (
    Case,
    CharField,
    Exists,
    F,
    OuterRef,
    Q,
    QuerySet,
    Value,
    When,
)
from django.db.models.functions import Concat

from apps.common.words import Words
from apps.fleet.models import Cluster
from apps.health.checks.base import Context
from apps.health.choices import ResultStatus
from apps.health.detectors.findings import TargetType
from apps.health.detectors.host_counters import HostHistory
from apps.health.models import CheckResult
from apps.telemetry.models import HostReading
from apps.telemetry.services.host_judged import HostJudged, host_readings_judged


@dataclass(frozen=True)
class Unchanged:
    """How a counter check's subject that nothing happened to is known in SQL
    (docs/checks.md, Candidates): its result target's type (`by_node`: the target names the
    node alone, as `node:HOST`) and the pass message it would get again."""

    target: TargetType
    message: str
    by_node: bool = False

    def target_sql(self) -> Concat:
        """A reading row's result target, as the check's target function makes it."""
        if self.by_node:
            return Concat(
                Value(f"{self.target.prefix}:"), "node__hostname", output_field=CharField()
            )
        return Concat(
            Value(f"{self.target.prefix}:"),
            "node__hostname",
            Value(self.target.sep),
            "subject",
            output_field=CharField(),
        )


def host_histories(
    ctx: Context,
    kind: str,
    target: Callable[[str, str], str],
    *,
    runs_key: str = "",
    unchanged: Unchanged | None = None,
) -> list[HostHistory]:
    """Every subject of host reading `kind` in the cluster with its latest and judged
    readings, the growth the previous run kept in each result's `details.grew` and, with
    `runs_key`, the count it kept under that key (2 queries, 3 with `runs_key`). Queues the
    write that makes each new reading the judged one (`ctx.writes`).

    With `unchanged` (a check judging counters' growth alone), a subject whose latest values
    are the judged ones, and whose stored result is that pass with no growth kept for the
    hour, is counted (`ctx.unchanged`), not loaded: nothing grew, so it would pass again
    with the same words and keep nothing, and its judged reading may stay (growth is measured
    from equal values either way). One more query (a count of the subjects in scope), and
    the rows read are the rest."""
    scope = HostReading.objects.filter(node__cluster=ctx.cluster, kind=kind, ts__isnull=False)
    readings = scope if unchanged is None else _skip_unchanged(ctx, scope, unchanged)
    rows = list(
        readings.values_list(
            "pk", "node__hostname", "subject", "ts", "values", "judged_ts", "judged_values"
        )
    )
    if unchanged is not None:
        # The unchanged are the subjects in scope that were not loaded (but for those on
        # nodes under maintenance, whose findings are dropped).
        skipped = frozenset(ctx.in_maintenance)
        if skipped:
            scope = scope.exclude(node__hostname__in=list(skipped))
        ctx.unchanged += scope.count() - sum(row[1] not in skipped for row in rows)
    grew = _grew(ctx.cluster, ctx.kind)
    runs = ctx.streaks(runs_key) if runs_key else {}
    out, judged = [], []
    for pk, host, subject, ts, values, judged_ts, judged_values in rows:
        if ts is None:  # filtered out above: a row is made and given its reading in one batch
            continue
        name = target(host, subject)
        out.append(
            HostHistory(
                node=host,
                subject=subject,
                at=ts,
                values=values or {},
                judged_at=judged_ts,
                judged=judged_values or {},
                grew=grew.get(name, {}),
                runs=runs.get(name, 0),
            )
        )
        if ts != judged_ts:
            judged.append(HostJudged(pk, ts, values or {}))
    if judged:
        ctx.writes.append(partial(host_readings_judged, judged))
    return out


def _skip_unchanged(
    ctx: Context, rows: QuerySet[HostReading], unchanged: Unchanged
) -> QuerySet[HostReading]:
    """`rows` but the unchanged subjects (`host_histories`, which counts them)."""
    stored = CheckResult.objects.filter(
        cluster=ctx.cluster,
        kind=ctx.kind,
        target=OuterRef("target"),
        status=ResultStatus.PASS,
        message=unchanged.message,
    ).exclude(details__has_key="grew")
    same = Q(judged_ts__isnull=False, values=F("judged_values")) & Q(Exists(stored))
    rows = rows.annotate(target=unchanged.target_sql()).annotate(
        same=Case(When(same, then=Value(True)), default=Value(False))
    )
    return rows.filter(same=False)


def _grew(
    cluster: Cluster, kind: str
) -> dict[str, dict[str, tuple[tuple[dt.datetime, float], ...]]]:
    """target → counter → (time, growth) that `kind`'s stored results keep (`details.grew`)."""
    rows = CheckResult.objects.filter(cluster=cluster, kind=kind, details__has_key="grew")
    out: dict[str, dict[str, tuple[tuple[dt.datetime, float], ...]]] = {}
    for target, details in rows.values_list("target", "details"):
        kept = details.get("grew")
        if not isinstance(kept, dict):
            continue
        out[target] = {
            name: tuple(
                (dt.datetime.fromisoformat(t), float(n))
                for t, n in points
                if isinstance(t, str) and isinstance(n, int | float)
            )
            for name, points in kept.items()
            if isinstance(points, list)
        }
    return out


def never_reported(cluster: Cluster, kind: str) -> bool:
    """Whether no node of the cluster has ever reported a host reading of `kind` (one
    query): its check shows "not monitored" there, never a pass."""
    return not HostReading.objects.filter(node__cluster=cluster, kind=kind).exists()


def unless_reported(kind: str, why: Words) -> Callable[[Cluster], Words | None]:
    """A host check's `not_monitored`: `why` while no node of the cluster has reported a
    reading of `kind` (one query), None once one has."""

    def not_monitored(cluster: Cluster) -> Words | None:
        return why if never_reported(cluster, kind) else None

    return not_monitored
