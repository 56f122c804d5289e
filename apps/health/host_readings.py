"""The host checks' loader (`host_memory`, `pcie`, `clock`): a cluster's host readings of one
kind with what the previous run judged and kept, and the write that makes this run's
readings the judged ones in the run's own transaction (docs/checks.md, `host_memory`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from functools import partial

from apps.common.words import Words
from apps.fleet.models import Cluster
from apps.health.checks.base import Context
from apps.health.detectors.host_counters import HostHistory
from apps.health.models import CheckResult
from apps.telemetry.models import HostReading
from apps.telemetry.services.host_judged import HostJudged, host_readings_judged


def host_histories(
    ctx: Context, kind: str, target: Callable[[str, str], str], *, runs_key: str = ""
) -> list[HostHistory]:
    """Every subject of host reading `kind` in the cluster with its latest and judged
    readings, the growth the previous run kept in each result's `details.grew` and, with
    `runs_key`, the count it kept under that key (2 queries, 3 with `runs_key`). Queues the
    write that makes each new reading the judged one (`ctx.writes`)."""
    rows = HostReading.objects.filter(
        node__cluster=ctx.cluster, kind=kind, ts__isnull=False
    ).values_list("pk", "node__hostname", "subject", "ts", "values", "judged_ts", "judged_values")
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
