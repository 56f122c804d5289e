"""GPU availability of a window from day sums kept by beat, so a report does not walk every
node's state history (docs/formulas.md, GPU availability: how the sums are kept).

A summed day holds each node's unavailable microseconds in it (`NodeDayDown`, only nodes with
some); the window's days that are not summed, or stale (a change back-filled before the day's
end since it was summed, or a node's `in_service_at` moved), and the part of today so far are
read from the history, as `availability.unavailable` reads it. Every sum is whole
microseconds times GPUs, so the figure is the same whichever days were summed.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

from django.db import transaction
from django.db.models import Count, F, Max, Min, Q, Sum
from django.utils import timezone

from apps.fleet.models import Cluster, Node, NodeStateChange
from apps.reports.availability import AVAILABLE, NodeHistory, unavailable
from apps.reports.inputs import node_histories
from apps.reports.models import AvailabilityDay, NodeDayDown

DAY = dt.timedelta(days=1)
US = dt.timedelta(microseconds=1)
KEEP_DAYS = 70  # beat sums (and keeps summed) the days up to this far back


def _micro(delta: dt.timedelta) -> int:
    return delta // US


def _day_start(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)


def _days(start: dt.datetime, end: dt.datetime) -> Iterator[dt.date]:
    """The UTC days wholly inside [start, end)."""
    day = start.astimezone(dt.UTC).date()
    if _day_start(day) < start:
        day += DAY
    while _day_start(day) + DAY <= end:
        yield day
        day += DAY


def _down_us(nodes: list[NodeHistory], start: dt.datetime, end: dt.datetime, now: dt.datetime):
    """(node index, gpus, unavailable µs) of each node with some in [start, end)."""
    for k, node in enumerate(nodes):
        down = sum(_micro(e - s) for s, e in unavailable(node, start, end, now))
        if down:
            yield k, node.gpu_count, down


def in_service_gpu_us(
    cluster: Cluster, start: dt.datetime, end: dt.datetime
) -> tuple[int, dt.datetime | None]:
    """Σ gpu_count × µs of W ∩ [in_service_at, ∞) over the cluster's nodes (end already
    clipped to now), and the earliest `in_service_at`: one sum for the nodes in service by
    `start`; those that came in within W (if any) summed per time they came in."""
    if end <= start:
        return 0, None
    nodes = Node.objects.filter(cluster=cluster)
    within = Q(in_service_at__gt=start, in_service_at__lt=end)
    row = nodes.aggregate(
        g=Sum("gpu_count", filter=Q(in_service_at__lte=start)),
        came=Count("id", filter=within),
        first=Min("in_service_at"),
    )
    total = (row["g"] or 0) * _micro(end - start)
    if row["came"]:
        came = nodes.filter(within).values_list("in_service_at").annotate(g=Sum("gpu_count"))
        for since, gpus in came.order_by():  # one row per time a batch came in
            total += gpus * _micro(end - since)
    return total, row["first"]


def _fresh_days(cluster: Cluster, days: list[dt.date]) -> dict[dt.date, int]:
    """The days of `days` that are summed and not stale: day → Σ gpus × down µs."""
    sealed = dict(
        AvailabilityDay.objects.filter(cluster=cluster, day__in=days).values_list(
            "day", "through_change"
        )
    )
    if not sealed:
        return {}
    last_end = _day_start(max(sealed)) + DAY
    late = list(
        NodeStateChange.objects.filter(
            node__cluster=cluster, id__gt=min(sealed.values()), at__lt=last_end
        ).values_list("id", "at")
    )
    fresh = {
        day
        for day, through in sealed.items()
        if not any(pk > through and at < _day_start(day) + DAY for pk, at in late)
    }
    rows = (
        NodeDayDown.objects.filter(node__cluster=cluster, day__in=fresh)
        .values("day")
        .annotate(
            down=Sum(F("down_us") * F("node__gpu_count")),
            moved=Count("id", filter=~Q(in_service_at=F("node__in_service_at"))),
        )
        .order_by()
    )
    out = dict.fromkeys(fresh, 0)
    for row in rows:
        if row["moved"]:
            del out[row["day"]]  # a node's in_service_at changed since: read the history
        else:
            out[row["day"]] = int(row["down"] or 0)
    return out


def _spans(start: dt.datetime, end: dt.datetime, summed: set[dt.date]):
    """The maximal parts of [start, end) not covered by a summed day."""
    cursor = start
    for day in sorted(summed):
        lo = _day_start(day)
        if lo > cursor:
            yield cursor, lo
        cursor = max(cursor, lo + DAY)
    if cursor < end:
        yield cursor, end


def window_availability(
    *, cluster: Cluster, start: dt.datetime, end: dt.datetime, now: dt.datetime
) -> float | None:
    """docs/formulas.md, GPU availability, of the cluster over [start, end) at `now`:
    Σ gpus × available time ÷ Σ gpus × time in service (None when nothing was in service)."""
    cut = min(end, now)
    total, first = in_service_gpu_us(cluster, start, cut)
    if not total or first is None:
        return None
    summed = _fresh_days(cluster, list(_days(start, cut)))
    down = sum(summed.values())
    for lo, hi in _spans(start, cut, set(summed)):
        lo = max(lo, first)  # no node in service before: nothing to read
        if hi > lo:
            down += live_down_gpu_us(cluster=cluster, start=lo, end=hi, now=now)
    return (total - down) / total


def live_down_gpu_us(
    *, cluster: Cluster, start: dt.datetime, end: dt.datetime, now: dt.datetime
) -> int:
    """Σ gpus × unavailable µs over [start, end) read from the history, without walking
    every node's: a node with no change after `start` stays all that time in the state of
    its newest change, which is `Node.state` (`node_set_state` keeps it so); so only the
    nodes that changed since and those unavailable now are read, with their history."""
    changed = NodeStateChange.objects.filter(node__cluster=cluster, at__gt=start).values("node_id")
    where = Q(pk__in=changed) | ~Q(state__in=AVAILABLE)
    nodes = node_histories(cluster=cluster, start=start, end=end, where=where)
    return sum(g * us for _, g, us in _down_us(nodes, start, end, now))


def seal_day(*, cluster: Cluster, day: dt.date) -> int:
    """Sum (again) one finished UTC day of the cluster: each node's unavailable µs in it.
    Returns the number of nodes with some."""
    lo = _day_start(day)
    hi = lo + DAY
    with transaction.atomic():
        through = NodeStateChange.objects.aggregate(m=Max("id"))["m"] or 0
        nodes = node_histories(cluster=cluster, start=lo, end=hi)
        pks = dict(
            Node.objects.filter(cluster=cluster).values_list("hostname", "pk")
        )  # node_histories keys by hostname
        rows = [
            NodeDayDown(
                node_id=pks[nodes[k].hostname],
                day=day,
                down_us=us,
                in_service_at=nodes[k].in_service_at,
            )
            for k, _, us in _down_us(nodes, lo, hi, hi)
        ]
        NodeDayDown.objects.filter(node__cluster=cluster, day=day).delete()
        NodeDayDown.objects.bulk_create(rows, batch_size=2000)
        AvailabilityDay.objects.update_or_create(
            cluster=cluster,
            day=day,
            defaults={"through_change": through, "computed_at": timezone.now()},
        )
    return len(rows)


def seal_days(*, cluster: Cluster, now: dt.datetime, limit: int = 31) -> list[dt.date]:
    """Sum the cluster's finished days of the last KEEP_DAYS not yet summed or stale, newest
    first, at most `limit` in one go (a new install catches up over a few runs); drop sums
    older than that. Returns the days summed."""
    earliest = Node.objects.filter(cluster=cluster).aggregate(m=Min("in_service_at"))["m"]
    if earliest is None:
        return []
    today = now.astimezone(dt.UTC).date()
    oldest = today - KEEP_DAYS * DAY
    since = max(oldest, earliest.astimezone(dt.UTC).date())
    days = [today - k * DAY for k in range(1, (today - since).days + 1)]
    fresh = set(_fresh_days(cluster, days))
    todo = [d for d in days if d not in fresh][:limit]
    for day in todo:
        seal_day(cluster=cluster, day=day)
    AvailabilityDay.objects.filter(cluster=cluster, day__lt=oldest).delete()
    NodeDayDown.objects.filter(node__cluster=cluster, day__lt=oldest).delete()
    return todo
