"""What the tests of a model moved between apps share: migrate the test database to a
state and back to the latest, and read its tables."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate(targets: list[tuple[str, str | None]]) -> Any:
    """Migrate the test database to `targets`; the models of that state (of the apps that
    have migrations there)."""
    MigrationExecutor(connection).migrate(targets)
    ContentType.objects.clear_cache()  # the migrations changed rows it may hold
    state = [target for target in targets if target[1] is not None]
    return MigrationExecutor(connection).loader.project_state(state).apps


def tables() -> set[str]:
    """Every table of the test database."""
    with connection.cursor() as cursor:
        return set(connection.introspection.table_names(cursor))


def migrate_latest() -> None:
    """Every app's latest migration (today's models, whatever state the database was in)."""
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    ContentType.objects.clear_cache()


def moved_back(before: list[tuple[str, str | None]]) -> Iterator[Any]:
    """For a fixture: the database as it was at `before` (its models); afterwards, every
    app's latest migration again, whatever the test did."""
    try:
        yield migrate(before)
    finally:
        migrate_latest()
