"""What the report pages read from their query string: the cluster, a bounded number, the
week — each answered through the selectors; an unknown cluster is a 404, a bad number the
default, a bad week a BadWeek naming the parameter (the page shows the default week)."""

from __future__ import annotations

import datetime as dt

from django.http import HttpRequest
from django.utils.translation import gettext as _

from apps.common.weeks import last_complete_week, parse_week, week_label
from apps.fleet.models import Cluster
from apps.fleet.page_cluster import page_cluster


def pick_cluster(request: HttpRequest) -> tuple[Cluster | None, list[str]]:
    """`?cluster=NAME` (404 if unknown, remembered), else the last cluster chosen, else the
    largest (apps/fleet/page_cluster.py); and every name."""
    return page_cluster(request)


def int_param(request: HttpRequest, key: str, default: int, lo: int, hi: int) -> int:
    """`?key=N` clamped to [lo, hi]; the default when it is missing or not a number."""
    try:
        return min(max(int(request.GET.get(key, default)), lo), hi)
    except ValueError:
        return default


class BadWeek(ValueError):
    """`?week=` is not a week the report can show: the message names the parameter, what it
    was given and the form it takes."""


def week_param(request: HttpRequest, now: dt.datetime) -> dt.datetime:
    """`?week=2026-W47`, else the last complete week (docs/formulas.md: the report opens on a
    finished week, not on one still in progress). A malformed or future week is a BadWeek."""
    text = request.GET.get("week")
    if not text:
        return last_complete_week(now)
    shown = text if len(text) <= 40 else text[:39] + "…"
    try:
        start = parse_week(text)
    except ValueError as exc:
        raise BadWeek(
            _(
                "week=%(shown)s is not a week: give it as an ISO week, year-W-week number, "
                "like %(example)s (%(why)s)"
            )
            % {"shown": repr(shown), "example": week_label(last_complete_week(now)), "why": exc}
        ) from exc
    if start > now:
        raise BadWeek(_("week=%(shown)s has not started yet") % {"shown": repr(shown)})
    return start
