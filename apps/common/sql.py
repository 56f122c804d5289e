"""SQL fragments that differ between PostgreSQL and SQLite."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from django.core.exceptions import FieldDoesNotExist
from django.db import connection
from django.db.models import Model


def epoch_seconds(column: str) -> str:
    """SQL for a timestamp column as float seconds since the Unix epoch.

    For queries run with parameters: a literal percent sign is written `%%`.
    """
    if connection.vendor == "postgresql":
        return f"EXTRACT(EPOCH FROM {column})::float8"
    # Django stores "YYYY-MM-DD HH:MM:SS[.ffffff]" in UTC; julianday() would lose microseconds.
    return f"(CAST(strftime('%%s', {column}) AS REAL) + CAST(substr({column}, 20) AS REAL))"


class ModelSql(Mapping[str, str]):
    """A model's quoted SQL names, for hand-written SQL that must stay fast (a COPY and an
    `UPDATE … FROM`) yet follow the model: `"table"` is its `db_table`, any other key a
    field's column (by name or attname, `node_id`). A name the model lacks raises
    `FieldDoesNotExist`, so a renamed field breaks the SQL at once, not in production.
    Use with `str.format_map`: `"UPDATE {table} SET {metrics} = …".format_map(ModelSql(GPU))`.
    """

    def __init__(self, model: type[Model]) -> None:
        self._model = model

    def __getitem__(self, name: str) -> str:
        quote = connection.ops.quote_name
        if name == "table":
            return quote(self._model._meta.db_table)
        field = self._model._meta.get_field(name)
        column = getattr(field, "column", None)
        if column is None:
            raise FieldDoesNotExist(f"{self._model.__name__}.{name} has no column")
        return quote(column)

    def __iter__(self) -> Iterator[str]:
        yield "table"
        for field in self._model._meta.concrete_fields:
            yield field.name

    def __len__(self) -> int:
        return 1 + len(self._model._meta.concrete_fields)
