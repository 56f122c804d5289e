"""ISO-week helpers: pure, no database."""

from __future__ import annotations

import datetime as dt

import pytest

from apps.common.weeks import WEEK, last_complete_week, parse_week, week_label, week_start

UTC = dt.UTC


def test_parse_week_gives_monday_midnight_utc() -> None:
    assert parse_week("2026-W47") == dt.datetime(2026, 11, 16, tzinfo=UTC)
    assert parse_week("2021-W01") == dt.datetime(2021, 1, 4, tzinfo=UTC)  # ISO year ≠ calendar


@pytest.mark.parametrize("text", ["", "2026-47", "2026-W4", "W47-2026", "2026-W47 "])
def test_parse_week_refuses_what_is_not_a_week(text: str) -> None:
    with pytest.raises(ValueError, match="ISO week like"):
        parse_week(text)


def test_parse_week_refuses_a_week_the_year_lacks() -> None:
    with pytest.raises(ValueError, match="no such ISO week"):
        parse_week("2025-W53")
    assert parse_week("2026-W53") == dt.datetime(2026, 12, 28, tzinfo=UTC)


def test_label_and_start_round_trip() -> None:
    moment = dt.datetime(2026, 11, 19, 15, 30, tzinfo=UTC)  # a Thursday
    assert week_start(moment) == dt.datetime(2026, 11, 16, tzinfo=UTC)
    assert week_label(week_start(moment)) == "2026-W47"
    assert parse_week(week_label(week_start(moment))) == week_start(moment)


def test_week_start_reads_the_moment_in_utc() -> None:
    # Monday 01:00 in UTC+2 is still Sunday in UTC: the week before.
    moment = dt.datetime(2026, 11, 16, 1, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert week_start(moment) == dt.datetime(2026, 11, 9, tzinfo=UTC)


def test_last_complete_week_is_the_one_before_this() -> None:
    monday = dt.datetime(2026, 11, 16, tzinfo=UTC)
    assert last_complete_week(monday) == monday - WEEK  # a week ends exactly at Monday 00:00
    assert last_complete_week(monday + dt.timedelta(days=6, hours=23)) == monday - WEEK


@pytest.mark.parametrize("text", ["0001-W01", "0002-W01", "1969-W52", "1999-W52"])
def test_parse_week_refuses_a_week_before_the_reports_begin(text: str) -> None:
    """issue 41: year 1's report read the weeks before it (a 500)."""
    with pytest.raises(ValueError, match="reports begin with week 2000-W01"):
        parse_week(text)
    assert parse_week("2000-W01") == dt.datetime(2000, 1, 3, tzinfo=UTC)
