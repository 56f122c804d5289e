"""Write conflicts between concurrent requests, told apart from a database outage.

A deadlock, a serialisation failure or a lock that could not be taken (PostgreSQL SQLSTATE
40P01, 40001, 55P03; SQLite's "database is locked") means the database is up and another
request won: the write is retried a few times inside the server (`atomic_with_retry`), and
only if it still conflicts is the client told so — never "database unavailable", which is
for a database that does not answer.
"""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from django.db import OperationalError, connection, transaction

CONFLICT_SQLSTATES = frozenset({"40P01", "40001", "55P03"})
SQLITE_LOCKED = ("database is locked", "database table is locked")
TRIES = 3
PAUSE_S = 0.05

P = ParamSpec("P")
R = TypeVar("R")


def is_conflict(exc: BaseException) -> bool:
    """Whether `exc` (Django's error or the driver's beneath it) is a write conflict — a
    deadlock, serialisation failure or lock not available — rather than an outage."""
    seen: BaseException | None = exc
    while seen is not None:
        sqlstate = getattr(seen, "sqlstate", None) or getattr(seen, "pgcode", None)
        if sqlstate in CONFLICT_SQLSTATES:
            return True
        if any(text in str(seen) for text in SQLITE_LOCKED):
            return True
        seen = seen.__cause__
    return False


def atomic_with_retry(func: Callable[P, R]) -> Callable[P, R]:
    """Run `func` in a transaction, again (up to 3 tries, a short jittered pause between)
    when it meets a write conflict. Inside an outer transaction it runs once: the conflict
    aborted the outer one too, so only its owner can retry."""

    @functools.wraps(func)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        if connection.in_atomic_block:
            with transaction.atomic():
                return func(*args, **kwargs)
        for attempt in range(1, TRIES + 1):
            try:
                with transaction.atomic():
                    return func(*args, **kwargs)
            except OperationalError as exc:
                if attempt == TRIES or not is_conflict(exc):
                    raise
                time.sleep(PAUSE_S * attempt * (0.5 + random.random()))  # noqa: S311
        raise AssertionError("unreachable")

    return run
