"""Database functions Django lacks, for PostgreSQL and SQLite alike."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db.models import FloatField, Func


class Epoch(Func):
    """A timestamp column as Unix seconds (float). Reading thousands of datetimes is
    dominated by parsing their text; a float costs a tenth of that."""

    output_field = FloatField()

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(
            compiler,
            connection,
            template="CAST(EXTRACT(EPOCH FROM %(expressions)s) AS double precision)",
        )

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        # Django keeps a datetime as UTC text, 'YYYY-MM-DD HH:MM:SS[.ffffff]'; SQLite's date
        # functions round to the millisecond, so the whole seconds are strftime's of the text
        # up to them and the fraction is read as written: exact to the microsecond.
        sql, params = compiler.compile(self.source_expressions[0])
        whole = f"CAST(strftime('%%s', substr({sql}, 1, 19)) AS REAL)"
        seconds = f"{whole} + CAST(substr({sql}, 20) AS REAL)"
        return f"({seconds})", (*params, *params)


def from_epoch(seconds: float) -> dt.datetime:
    """Unix seconds → an aware UTC datetime, to the microsecond."""
    return dt.datetime.fromtimestamp(seconds, tz=dt.UTC)


class JsonNumber(Func):
    """A JSON column's value under `key` as a float when it is a JSON number, else NULL
    (missing, null, text, a boolean): what `findings.number` reads, so a comparison in SQL
    judges exactly the values a detector would and leaves the rest to it. `key` is a name
    from the code (a metric), never text from a request."""

    output_field = FloatField()

    def __init__(self, column: str, key: str) -> None:
        if not key.replace("_", "").isalnum():
            raise ValueError(f"not a metric name: {key!r}")
        self.key = key
        super().__init__(column)

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        sql, params = compiler.compile(self.source_expressions[0])
        k = self.key
        return (
            f"(CASE WHEN jsonb_typeof({sql} -> '{k}') = 'number' "
            f"THEN CAST({sql} ->> '{k}' AS double precision) END)",
            (*params, *params),
        )

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        sql, params = compiler.compile(self.source_expressions[0])
        k = self.key
        return (
            f"(CASE WHEN json_type({sql}, '$.{k}') IN ('integer', 'real') "
            f"THEN json_extract({sql}, '$.{k}') END)",
            (*params, *params),
        )
