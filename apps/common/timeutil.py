"""Time parsing and formatting shared by intake, pages and reports."""

from __future__ import annotations

import datetime as dt
import functools
import math

from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _

UTC = dt.UTC
# A sample stamped further ahead is a clock error (or a forgery): stored, it would be the
# GPU's or the job's newest forever and freeze its state (docs/api.md, Conventions).
FUTURE_SLACK = dt.timedelta(minutes=5)
FUTURE_ERROR = "is more than 5 minutes in the future"


def parse_ts(value: object) -> dt.datetime:
    """Parse an ISO 8601 timestamp *with a zone* (or epoch seconds) into an aware UTC datetime.

    Raises ValueError with a message fit for a 400 body.
    """
    if isinstance(value, str):
        return _parse_text(value)  # a batch repeats its timestamps: parse each once
    if isinstance(value, bool):
        raise ValueError("expected an ISO 8601 timestamp with a zone")
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise ValueError("timestamp must be finite")
        return dt.datetime.fromtimestamp(float(value), tz=UTC)
    raise ValueError("expected an ISO 8601 timestamp with a zone")


def not_future(ts: dt.datetime, now: dt.datetime) -> dt.datetime:
    """`ts` itself, or ValueError when it is more than FUTURE_SLACK after `now`."""
    if ts > now + FUTURE_SLACK:
        raise ValueError(FUTURE_ERROR)
    return ts


@functools.lru_cache(maxsize=8192)
def _parse_text(value: str) -> dt.datetime:
    try:
        parsed = parse_datetime(value.strip())
    except ValueError:
        parsed = None
    if parsed is None:
        raise ValueError(f"{value!r} is not an ISO 8601 timestamp")
    if parsed.tzinfo is None:
        raise ValueError(f"{value!r} has no time zone (add Z or an offset)")
    return parsed.astimezone(UTC)


def ago(when: dt.datetime | None, now: dt.datetime) -> str:
    """A short relative hint: '42 s ago', '4 min ago', '3 h ago', '2 d ago' (in the page's
    language: '4 分钟前')."""
    if when is None:
        return _("never")
    seconds = (now - when).total_seconds()
    past, seconds = seconds >= 0, abs(seconds)
    if seconds < 90:
        n = int(seconds)
        text = _("%(n)s s ago") if past else _("%(n)s s from now")
    elif seconds < 90 * 60:
        n = int(seconds // 60)
        text = _("%(n)s min ago") if past else _("%(n)s min from now")
    elif seconds < 48 * 3600:
        n = int(seconds // 3600)
        text = _("%(n)s h ago") if past else _("%(n)s h from now")
    else:
        n = int(seconds // 86400)
        text = _("%(n)s d ago") if past else _("%(n)s d from now")
    return text % {"n": n}
