"""Deleting old rows in bounded batches, so pruning never holds a long lock."""

from __future__ import annotations

from django.db import transaction
from django.db.models import QuerySet

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
