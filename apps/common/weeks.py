"""ISO weeks in UTC: the unit of the weekly report, its e-mail, its API and its pages.

Pure: plain datetimes in, plain values out, no Django. A week starts on Monday 00:00 UTC
and is named `2026-W47` (ISO 8601 year and week number).
"""

from __future__ import annotations

import datetime as dt
import re

WEEK = dt.timedelta(weeks=1)
# The first week a report may ask for. A week's report also reads the weeks before it (the
# previous week, trends over the last weeks) and stamps its ZIP files with its start, which
# ZIP cannot date before 1980: `0001-W01` was a 500. No GPU cluster ran earlier than this.
FIRST_YEAR = 2000
_WEEK_RE = re.compile(r"^(\d{4})-W(\d{2})$", re.ASCII)  # not full-width digits


def parse_week(text: str) -> dt.datetime:
    """`2026-W47` → Monday 00:00 UTC of that ISO week; ValueError saying what is wrong (not
    a week, no such week, or one before FIRST_YEAR)."""
    match = _WEEK_RE.match(text or "")
    if not match:
        raise ValueError("expected an ISO week like 2026-W47")
    if int(match[1]) < FIRST_YEAR:
        raise ValueError(f"reports begin with week {FIRST_YEAR}-W01")
    try:
        day = dt.date.fromisocalendar(int(match[1]), int(match[2]), 1)
    except ValueError as exc:
        raise ValueError(f"no such ISO week: {exc}") from exc
    return dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)


def week_label(start: dt.datetime) -> str:
    """Monday 00:00 → `2026-W47`."""
    iso = start.isocalendar()
    return f"{iso.year:04d}-W{iso.week:02d}"


def week_start(moment: dt.datetime) -> dt.datetime:
    """Monday 00:00 UTC of the week holding `moment`."""
    day = moment.astimezone(dt.UTC).date()
    return dt.datetime.combine(day - dt.timedelta(days=day.weekday()), dt.time(), tzinfo=dt.UTC)


def last_complete_week(now: dt.datetime) -> dt.datetime:
    """Monday 00:00 UTC of the last ISO week that has ended by `now`."""
    return week_start(now) - WEEK
