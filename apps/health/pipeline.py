"""Pipeline status: when each of KUAE's own parts last worked, and whether that is too long
ago (docs/operations.md, Watching the watcher; docs/api.md, Pipeline). Reads only."""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass

from django.conf import settings
from django.core.cache import cache
from django.db.models import CharField, Count, Max, Min, OuterRef, Subquery, Value
from django.db.models.functions import Concat
from django.utils import timezone
from django.utils.translation import gettext as _

from apps.common.heartbeats import heartbeats
from apps.common.models import Heartbeat
from apps.fleet.models import Cluster
from apps.health.checks import CHECKS
from apps.health.choices import SOURCE_TARGET, ResultStatus, RunStatus
from apps.health.models import CheckResult, CheckRun, CheckSchedule

# Parts shown and exported but not part of `ok`: detection does not wait on them.
NOT_DETECTION = ("scraper", "slurm_sync", "telemetry_source")
BEAT_INTERVAL_S = 10  # beat's fastest entry (health-tick): it ticks at least this often
CACHE_KEY = "kuae-pipeline-status"
CACHE_S = 10
# A stale status is kept only this long, so a page reloaded once the part is back is told
# within seconds, not a whole CACHE_S later (issue 42).
CACHE_STALE_S = 2


@dataclass(frozen=True)
class Part:
    """One part: when it last worked, how old that is, its limit and whether it is within."""

    name: str
    cluster: str | None
    last_ok_at: dt.datetime | None
    age_s: float | None
    limit_s: float | None
    ok: bool
    detail: str
    detection: bool = True
    count: int = 1  # `queued_runs`: how many runs wait (not in the API's shape)

    def as_dict(self) -> dict[str, object]:
        """The API's shape (docs/api.md, Pipeline)."""
        row = asdict(self)
        row.pop("detection")
        row.pop("count")
        if row["cluster"] is None:
            row.pop("cluster")
        return row


@dataclass(frozen=True)
class PipelineStatus:
    """Every part; `ok` when every part detection depends on is within its limit."""

    ok: bool
    parts: list[Part]
    at: dt.datetime

    def stale(self) -> list[Part]:
        """The detection parts past their limits, oldest first."""
        return sorted(
            (p for p in self.parts if p.detection and not p.ok),
            key=lambda p: -(p.age_s if p.age_s is not None else float("inf")),
        )

    def workers_live(self) -> bool:
        """Whether any worker answered its ping within its limit."""
        return any(p.ok for p in self.parts if p.name.startswith("worker:"))


def _part(
    name: str,
    last: dt.datetime | None,
    interval_s: float,
    now: dt.datetime,
    *,
    cluster: str | None = None,
    detail: str = "",
    factor: float = 2.0,
    detection: bool = True,
    count: int = 1,
) -> Part:
    age = max(0.0, (now - last).total_seconds()) if last else None
    limit = factor * interval_s
    ok = age is not None and age <= limit
    return Part(name, cluster, last, age, limit, ok, detail, detection, count)


def _check_parts(now: dt.datetime) -> list[Part]:
    """`check:<kind>` per cluster and enabled scheduled kind: its last completed run (one
    that a worker started and finished), stale past 2 × the schedule (3 queries)."""
    names = dict(Cluster.objects.values_list("pk", "name"))
    schedules = list(
        CheckSchedule.objects.filter(enabled=True, kind__in=list(CHECKS)).values_list(
            "cluster_id", "kind", "interval_s"
        )
    )
    last = {
        (c, k): at
        for c, k, at in CheckRun.objects.filter(
            status__in=[RunStatus.DONE, RunStatus.ERROR], started_at__isnull=False
        )
        .values("cluster_id", "kind")
        .annotate(at=Max("started_at"))
        .values_list("cluster_id", "kind", "at")
    }
    parts = []
    for cluster_id, kind, interval in sorted(schedules, key=lambda s: (names.get(s[0], ""), s[1])):
        at = last.get((cluster_id, kind))
        detail = f"every {interval} s" if at else f"every {interval} s; none has completed"
        parts.append(
            _part(f"check:{kind}", at, interval, now, cluster=names.get(cluster_id), detail=detail)
        )
    return parts


def _queued_part(now: dt.datetime) -> Part:
    """`queued_runs`: the oldest run still queued, stale once older than its kind's interval,
    counting the runs of every kind whose oldest is late (2 queries)."""
    oldest = list(
        CheckRun.objects.filter(status=RunStatus.QUEUED)
        .order_by()
        .values("cluster_id", "kind")
        .annotate(at=Min("queued_at"), n=Count("pk"))
        .values_list("cluster_id", "kind", "at", "n")
    )
    if not oldest:
        return Part("queued_runs", None, now, 0.0, None, True, "no run is waiting")
    intervals = {
        (c, k): i
        for c, k, i in CheckSchedule.objects.values_list("cluster_id", "kind", "interval_s")
    }
    worst: tuple[float, float, dt.datetime, str] | None = None
    late = 0
    for cluster_id, kind, at, n in oldest:
        spec = CHECKS.get(kind)
        interval = intervals.get((cluster_id, kind), spec.interval_s if spec else 60)
        age = max(0.0, (now - at).total_seconds())
        late += n if age > interval else 0
        if worst is None or age / interval > worst[0] / worst[1]:
            worst = (age, float(interval), at, kind)
    assert worst is not None
    age, limit, at, kind = worst
    return Part(
        "queued_runs",
        None,
        at,
        age,
        limit,
        age <= limit,
        f"oldest queued run: {kind}, waiting {round(age)} s",
        count=max(1, late),
    )


def _worker_parts(beats: dict[str, dt.datetime], now: dt.datetime) -> list[Part]:
    """`worker:<name>` for each worker seen within KUAE_WORKER_FORGET_S; `worker:*` (never
    ok) when none is."""
    interval = settings.KUAE_HEARTBEAT_S
    forget = now - dt.timedelta(seconds=settings.KUAE_WORKER_FORGET_S)
    parts = [
        _part(name, at, interval, now, detail="answers the broadcast ping")
        for name, at in sorted(beats.items())
        if name.startswith("worker:") and at >= forget
    ]
    if not parts:
        parts.append(
            Part("worker:*", None, None, None, 2.0 * interval, False, "no worker has answered")
        )
    return parts


def _queue_parts(now: dt.datetime) -> list[Part]:
    """`queue` per cluster with a Celery queue of its own: when a worker consuming it last
    answered, stale (2 × KUAE_HEARTBEAT_S) when no live worker consumes it (2 queries)."""
    forget = now - dt.timedelta(seconds=settings.KUAE_WORKER_FORGET_S)
    takers = list(
        Heartbeat.objects.filter(part__startswith="worker:", at__gte=forget)
        .exclude(queues="")
        .values_list("queues", "at")
    )
    parts = []
    for name, queue in (
        Cluster.objects.exclude(queue="").order_by("name").values_list("name", "queue")
    ):
        at = max((a for q, a in takers if f",{queue}," in q), default=None)
        parts.append(_part("queue", at, settings.KUAE_HEARTBEAT_S, now, cluster=name, detail=queue))
    return parts


def _source_parts(now: dt.datetime) -> list[Part]:
    """`telemetry_source` per cluster whose checks read a Prometheus (1 query)."""
    parts = []
    for name, status, at, since, message in CheckResult.objects.filter(
        target=SOURCE_TARGET
    ).values_list("cluster__name", "status", "at", "since", "message"):
        ok = status != ResultStatus.ERROR
        last = at if ok else since
        age = max(0.0, (now - last).total_seconds()) if last else None
        parts.append(Part("telemetry_source", name, last, age, None, ok, message, detection=False))
    return parts


def pipeline_status(*, now: dt.datetime | None = None) -> PipelineStatus:
    """Every part of KUAE with its last success, age, limit and verdict (about 10 queries)."""
    now = now or timezone.now()
    beats = heartbeats()
    parts = [_part("beat", beats.get("beat"), BEAT_INTERVAL_S, now, detail="beat's own tick")]
    parts += _worker_parts(beats, now)
    parts += _queue_parts(now)
    parts.append(_queued_part(now))
    parts += _check_parts(now)
    if settings.KUAE_SCRAPE_INTERVAL and "scraper" in beats:
        parts.append(
            _part("scraper", beats["scraper"], settings.KUAE_SCRAPE_INTERVAL, now, detection=False)
        )
    if settings.KUAE_SLURM_SYNC_S and "slurm_sync" in beats:
        parts.append(
            _part(
                "slurm_sync", beats["slurm_sync"], settings.KUAE_SLURM_SYNC_S, now, detection=False
            )
        )
    parts += _source_parts(now)
    return PipelineStatus(ok=all(p.ok for p in parts if p.detection), parts=parts, at=now)


def detection_status(*, now: dt.datetime | None = None) -> PipelineStatus:
    """The parts detection depends on, in one query (what every page's banner reads): each
    enabled schedule with its last completed and oldest queued run and, as scalar subqueries,
    beat's tick, the newest and oldest remembered worker answers and, for a cluster with a
    queue of its own, the newest answer of a worker consuming it. Workers are summed up:
    `worker:*` for the newest answer (none live when it is stale), `worker:?` for the oldest
    remembered one. A second query only when there is no schedule at all."""
    now = now or timezone.now()
    forget = now - dt.timedelta(seconds=settings.KUAE_WORKER_FORGET_S)
    same = {"cluster_id": OuterRef("cluster_id"), "kind": OuterRef("kind")}
    done = [RunStatus.DONE, RunStatus.ERROR]
    workers = Heartbeat.objects.filter(part__startswith="worker:", at__gte=forget)
    rows = list(
        CheckSchedule.objects.filter(enabled=True, kind__in=list(CHECKS))
        .annotate(
            last=Subquery(
                CheckRun.objects.filter(**same, status__in=done, started_at__isnull=False)
                .order_by("-started_at")
                .values("started_at")[:1]
            ),
            queued=Subquery(
                CheckRun.objects.filter(**same, status=RunStatus.QUEUED)
                .order_by("queued_at")
                .values("queued_at")[:1]
            ),
            waiting=Subquery(
                CheckRun.objects.filter(**same, status=RunStatus.QUEUED)
                .order_by()
                .values("cluster_id")
                .annotate(n=Count("pk"))
                .values("n")[:1]
            ),
            beat=Subquery(Heartbeat.objects.filter(part="beat").values("at")[:1]),
            newest=Subquery(workers.order_by("-at").values("at")[:1]),
            oldest=Subquery(workers.order_by("at").values("at")[:1]),
            # the newest answer of a worker consuming the cluster's own queue, if it has one
            taken=Subquery(
                workers.filter(
                    queues__contains=Concat(
                        Value(","), OuterRef("cluster__queue"), Value(","), output_field=CharField()
                    )
                )
                .order_by("-at")
                .values("at")[:1]
            ),
        )
        .values_list(
            "cluster__name",
            "kind",
            "interval_s",
            "last",
            "queued",
            "beat",
            "newest",
            "oldest",
            "cluster__queue",
            "taken",
            "waiting",
        )
    )
    if rows:
        beat, newest, oldest = rows[0][5], rows[0][6], rows[0][7]
    else:
        beats = heartbeats()
        seen = [at for name, at in beats.items() if name.startswith("worker:") and at >= forget]
        beat, newest, oldest = beats.get("beat"), max(seen, default=None), min(seen, default=None)
    interval = settings.KUAE_HEARTBEAT_S
    parts = [
        _part("beat", beat, BEAT_INTERVAL_S, now),
        _part("worker:*", newest, interval, now),
        _part("worker:?", oldest, interval, now),
    ]
    queues: dict[str, Part] = {}
    for cluster, kind, every, last, queued, _beat, _new, _old, queue, taken, waiting in rows:
        if queue and cluster not in queues:
            queues[cluster] = _part("queue", taken, interval, now, cluster=cluster, detail=queue)
            parts.append(queues[cluster])
        parts.append(_part(f"check:{kind}", last, every, now, cluster=cluster))
        if queued is not None:
            parts.append(
                _part(
                    "queued_runs",
                    queued,
                    every,
                    now,
                    cluster=cluster,
                    factor=1.0,
                    count=waiting or 1,
                )
            )
    return PipelineStatus(ok=all(p.ok for p in parts), parts=parts, at=now)


def pipeline_status_cached() -> PipelineStatus:
    """`detection_status`, kept `CACHE_S` seconds per process while ok and `CACHE_STALE_S`
    while not (a part that is back clears the banner within seconds): what every page's
    banner reads."""
    status = cache.get(CACHE_KEY)
    if not isinstance(status, PipelineStatus):
        status = detection_status()
        cache.set(CACHE_KEY, status, CACHE_S if status.ok else CACHE_STALE_S)
    return status


def data_age(status: PipelineStatus, cluster: str) -> dt.datetime | None:
    """When the newest evidence on `cluster` was taken: its freshest `check:<kind>` part's
    last completed run, or None when none has completed (the overview's "data from" line,
    docs/operations.md, Watching the watcher). Reads the status: no query."""
    return max(
        (
            p.last_ok_at
            for p in status.parts
            if p.name.startswith("check:") and p.cluster == cluster and p.last_ok_at
        ),
        default=None,
    )


def unverified_words(status: PipelineStatus, cluster: str) -> str | None:
    """The words "unverified: checks stale 4 min" while `cluster`'s `check:heartbeat`
    part is stale, so a healthy node is not shown healthy on old evidence
    (docs/operations.md, Watching the watcher); None while it is fresh or not scheduled.
    Reads the status: no query. In the page's language."""
    for part in status.parts:
        if part.name == "check:heartbeat" and part.cluster == cluster and not part.ok:
            if part.age_s is None:
                return _("unverified: no heartbeat check has completed")
            return _("unverified: checks stale %(age)s") % {"age": _age_words(part.age_s)}
    return None


def age_words(seconds: float | None) -> str:
    """An age in words for a line a person reads: "40 s", "4 min", "3 h" ("ever" for none),
    in the page's language."""
    return _age_words(seconds)


def _age_words(seconds: float | None) -> str:
    if seconds is None:
        return _("ever")
    if seconds < 120:
        return _("%(n)s s") % {"n": round(seconds)}
    if seconds < 2 * 3600:
        return _("%(n)s min") % {"n": round(seconds / 60)}
    return _("%(n)s h") % {"n": round(seconds / 3600)}


def _unpinged(part: Part, beat: Part | None) -> bool:
    """Whether a stale `worker:` part's silence follows from beat's: beat, which sends the
    pings, stopped before the worker had missed its limit's worth of them."""
    if beat is None or beat.ok or not part.name.startswith("worker:"):
        return False
    if beat.last_ok_at is None or part.last_ok_at is None:
        return beat.last_ok_at is None
    return (beat.last_ok_at - part.last_ok_at).total_seconds() <= (part.limit_s or 0.0)


def _checks_words(checks: list[Part], *, alone: bool) -> list[str]:
    """Late checks in words: one sentence per cluster, its checks counted when several are
    late ("no health check has completed on c1 for 10 min (6 checks are late)"); the
    cluster left unnamed when the checks of one cluster are all that is stale."""
    by_cluster: dict[str | None, list[Part]] = {}
    for part in checks:
        by_cluster.setdefault(part.cluster, []).append(part)
    said = []
    for cluster, late in by_cluster.items():
        ages = [p.age_s for p in late if p.age_s is not None]
        words = {"cluster": cluster, "n": len(late), "kind": late[0].name[6:]}
        if len(late) == 1:
            if late[0].age_s is None:
                said.append(_("no %(kind)s check has completed on %(cluster)s") % words)
            else:
                words["age"] = _age_words(ages[0])
                said.append(_("no %(kind)s check has completed on %(cluster)s for %(age)s") % words)
            continue
        if ages:
            words["age"] = _age_words(max(ages))
        if alone and len(by_cluster) == 1:
            text = (
                _("no health check has completed for %(age)s (%(n)s checks are late)")
                if ages
                else _("no health check has completed yet (%(n)s checks are late)")
            )
        else:
            text = (
                _(
                    "no health check has completed on %(cluster)s for %(age)s"
                    " (%(n)s checks are late)"
                )
                if ages
                else _("no health check has completed on %(cluster)s yet (%(n)s checks are late)")
            )
        said.append(text % words)
    return said


def _queued_words(queued: list[Part]) -> str:
    """Runs waiting past their interval in one sentence, counted: "7 check runs have
    waited up to 112 s for a worker" (one part per cluster and kind, each with its count)."""
    runs = sum(p.count for p in queued)
    age = _age_words(max((p.age_s or 0.0) for p in queued))
    if runs == 1:
        return _("a check run has waited %(age)s for a worker") % {"age": age}
    return _("%(n)s check runs have waited up to %(age)s for a worker") % {"n": runs, "age": age}


def stale_words(status: PipelineStatus) -> str | None:
    """The banner's words for what is stale and for how long, or None when nothing
    detection depends on is: "No health check has completed for 4 min; no worker has
    answered for 4 min — the worker may be stopped or stalled. What you see may be out of
    date." KUAE only knows that no worker answers, never that one exited, so it never says
    "not running" (docs/operations.md, Watching the watcher). While beat is stale, a worker
    that stopped answering only when beat stopped pinging is not said to be down: "—
    nothing is scheduled: no check starts and no worker is pinged". In the page's language."""
    beat = next((p for p in status.parts if p.name == "beat"), None)
    stale = [p for p in status.stale() if not _unpinged(p, beat)]
    if not stale:
        return None
    said: list[str] = []
    queued = [p for p in stale if p.name == "queued_runs"]
    for part in stale:
        words = {"age": _age_words(part.age_s), "name": part.name[7:], "cluster": part.cluster}
        words["queue"] = part.detail
        if part.name == "beat":
            said.append(
                _("beat (which starts KUAE's checks) has not ticked yet")
                if part.age_s is None
                else _("beat (which starts KUAE's checks) has not ticked for %(age)s") % words
            )
        elif part.name.startswith("worker:"):
            if part.name == "worker:*":
                said.append(
                    _("no worker has answered")
                    if part.age_s is None
                    else _("no worker has answered for %(age)s") % words
                )
            elif part.name == "worker:?":
                if status.workers_live():
                    said.append(_("a worker has not answered for %(age)s") % words)
            else:
                said.append(_("worker %(name)s has not answered for %(age)s") % words)
        elif part.name == "queue":
            said.append(
                _("no worker takes cluster %(cluster)s's queue %(queue)s") % words
                if part.age_s is None
                else _(
                    "no worker takes cluster %(cluster)s's queue %(queue)s (none has for %(age)s)"
                )
                % words
            )
        elif part.name == "queued_runs" and part is queued[0]:
            said.append(_queued_words(queued))
    checks = [p for p in stale if p.name.startswith("check:")]
    said += _checks_words(checks, alone=len(checks) == len(stale))
    text = _("; ").join(said)
    text = text[0].upper() + text[1:]
    if not status.workers_live() and any(p.name.startswith("worker:") for p in stale):
        text += _(" — the worker may be stopped or stalled")
    elif beat is not None and not beat.ok:
        text += _(" — nothing is scheduled: no check starts and no worker is pinged")
    return text + _(". What you see may be out of date.")
