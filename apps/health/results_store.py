"""A check run's results written (docs/checks.md, Candidates): each target's result upserted,
a pass only when it changes or keeps a counter's growth, a first run's results in one
bulk write."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence

import orjson
from django.db import IntegrityError
from django.db.models import BooleanField, ExpressionWrapper, Q

from apps.common.bulk import among, insert_ignore, update_many
from apps.health import detectors as d
from apps.health.choices import ResultStatus
from apps.health.models import CheckResult, CheckRun


def _clean(value: object) -> object:
    """JSON-safe details: non-finite floats become None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def results_store(
    run: CheckRun,
    findings: Sequence[d.Finding],
    nodes: dict[str, tuple[int, str]],
    now: dt.datetime,
) -> list[d.Finding]:
    """Upsert each target's result; return the findings that turned to pass."""
    stored = CheckResult.objects.filter(cluster=run.cluster, kind=run.kind)
    if len(findings) <= AMONG_AT_MOST:
        # A run that judged only its candidates (docs/checks.md, Candidates) reads only
        # their results, not the whole fleet's.
        stored = among(stored, "target", [f.target for f in findings])
    kept = ExpressionWrapper(Q(details__has_key=KEPT), output_field=BooleanField())
    existing = {
        target: (pk, status, message, had)
        for target, pk, status, message, had in stored.annotate(kept=kept).values_list(
            "target", "pk", "status", "message", "kept"
        )
    }
    # Only results whose verdict or message changed are written: most of 10,000 GPUs pass
    # unchanged minute after minute, and their `at` stays when that pass was set (the
    # kind's last run time is on the run). Non-pass messages carry live figures, so they
    # are refreshed every run. Their times are read for those alone: at 100,000 GPUs,
    # reading every result's two timestamps took longer than the rest of storing them.
    # A pass that keeps a counter's growth for the next run (`details.grew`: the hour's
    # growth a per-hour threshold sums) is written too, and once more when it keeps none:
    # unwritten, the next run would not see the growth and an hour's errors that arrive a
    # few a run would never add up past the threshold.
    new: list[tuple[object, ...]] = []
    changed, cleared = [], []
    for f in findings:
        message = f.message[:2000]
        if f.target in existing:
            pk, status, old_message, had = existing[f.target]
            if status != ResultStatus.PASS and f.status == ResultStatus.PASS:
                cleared.append(f)
            keeps = bool(had) or KEPT in f.details
            if status == f.status == ResultStatus.PASS and old_message == message and not keeps:
                continue
            changed.append((pk, status, message, f))
        else:
            new.append(
                (
                    run.cluster_id,
                    run.kind,
                    f.target,
                    nodes[f.node][0] if f.node in nodes else None,
                    f.job,
                    f.status,
                    message,
                    orjson.dumps(_clean(f.details)).decode(),
                    now,
                    run.pk,
                    now,
                    now if f.status == ResultStatus.FAIL else None,
                )
            )
    times = _result_times([pk for pk, *_ in changed])
    updates = []
    for pk, status, message, f in changed:
        since, prev_fail = times[pk]
        last_fail = now if f.status == ResultStatus.FAIL else prev_fail
        details = orjson.dumps(_clean(f.details)).decode()
        same_since = since if status == f.status else now
        updates.append((pk, f.status, message, details, now, run.pk, same_since, last_fail))
    # A first run writes a pass for every GPU: COPY (PostgreSQL) or one executemany
    # (SQLite), not the ORM's objects — at 100,000 GPUs those took most of the run. The run
    # holds its cluster's row, so no other run inserts these targets meanwhile; a row that
    # still collided fails the run (as the ORM's insert did), never is quietly dropped.
    if new and insert_ignore(CheckResult._meta.db_table, RESULT_COLUMNS, new) != len(new):
        raise IntegrityError(f"{run.kind}: a result was stored by another writer meanwhile")
    update_many(
        CheckResult._meta.db_table,
        ("id",),
        ("status", "message", "details", "at", "run_id", "since", "last_fail_at"),
        updates,
    )
    return cleared


# What a counter check keeps in a result's details for its next run (apps/health/host_readings.py).
KEPT = "grew"
# Up to this many findings, a run reads only their targets' stored results; more (a first
# run, a whole fleet judged) read the kind's results at once, which is then cheaper.
AMONG_AT_MOST = 5_000
RESULT_COLUMNS = (
    "cluster_id",
    "kind",
    "target",
    "node_id",
    "job_id",
    "status",
    "message",
    "details",
    "at",
    "run_id",
    "since",
    "last_fail_at",
)


def _result_times(
    pks: Sequence[int],
) -> dict[int, tuple[dt.datetime, dt.datetime | None]]:
    """Results' `since` and `last_fail_at` by id (no query for none)."""
    if not pks:
        return {}
    rows = among(CheckResult.objects.all(), "id", pks).values_list("pk", "since", "last_fail_at")
    return {pk: (since, last_fail) for pk, since, last_fail in rows}
