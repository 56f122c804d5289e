"""Removing rows past their retention age without holding long locks: whole day partitions
dropped where the table is partitioned by that time (PostgreSQL), else bounded batches."""

from __future__ import annotations

import datetime as dt

from django.db import models, transaction
from django.db.models import QuerySet

from apps.common.partitions import partition_key, partitions_drop_before

BATCH = 20_000


def delete_in_batches(queryset: QuerySet, batch: int = BATCH) -> int:
    """Delete every row of `queryset`, `batch` rows per transaction; returns the count."""
    total = 0
    while True:
        ids = list(queryset.values_list("pk", flat=True)[:batch])
        if not ids:
            return total
        with transaction.atomic():
            deleted, _ = queryset.model.objects.filter(pk__in=ids).delete()
        total += deleted


def prune_before(model: type[models.Model], field: str, cutoff: dt.datetime) -> int:
    """Remove `model`'s rows whose `field` is before `cutoff`; returns how many went.

    A table partitioned by day on that column loses its days wholly before the cutoff (a
    day that straddles it stays until it is all older) and DEFAULT's rows before it; any
    other table, SQLite's among them, has exactly its older rows deleted in batches."""
    table = model._meta.db_table
    column = getattr(model._meta.get_field(field), "column", field)
    if partition_key(table) == column:
        return partitions_drop_before(table, cutoff)
    return delete_in_batches(model._default_manager.filter(**{f"{field}__lt": cutoff}))
