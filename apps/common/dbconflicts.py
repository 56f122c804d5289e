"""Write conflicts between concurrent requests, told apart from a database outage.

A deadlock, a serialisation failure or a lock that could not be taken (PostgreSQL SQLSTATE
40P01, 40001, 55P03; SQLite's "database is locked") means the database is up and another
request won: the write is retried a few times inside the server (`atomic_with_retry`), and
only if it still conflicts is the client told so — never "database unavailable", which is
for a database that does not answer.

Locks (docs/architecture.md, Locks) — the one rule: a transaction that locks several rows
takes them in one global order, so two writers never each hold what the other waits for:

1. the cluster's row (a mutex: `select_for_update(no_key=True)`);
2. the request's own claim — its maintenance window, repair or alert fingerprints;
3. nodes, by primary key ascending (`rows_key_share` before linking them, `FOR NO KEY
   UPDATE` to change one: a state change does not block a link to the node);
4. incidents, by primary key ascending.

A writer that must break it (a lock taken late, after a later kind) is retried by
`atomic_with_retry` when the database picks it as a deadlock's victim, never answered 503.
"""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable, Collection
from typing import ParamSpec, TypeVar

from django.db import OperationalError, connection, transaction
from django.db.models import Model

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


def rows_key_share(model: type[Model], pks: Collection[int]) -> None:
    """Take `FOR KEY SHARE` locks on `model`'s rows `pks`, by primary key ascending: what
    inserting rows that reference them (an incident's nodes) would take anyway, in the one
    order (rule 3 above) rather than in whatever order the inserts happen to run. Only on
    PostgreSQL (SQLite has one writer at a time); call it inside a transaction."""
    wanted = sorted(set(pks))
    if not wanted or connection.vendor != "postgresql":
        return
    table = connection.ops.quote_name(model._meta.db_table)
    column = connection.ops.quote_name(model._meta.pk.column or "id")
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {column} FROM {table} WHERE {column} = ANY(%s) "  # noqa: S608
            f"ORDER BY {column} FOR KEY SHARE",
            [wanted],
        )
