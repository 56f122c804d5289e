"""Filter fields shared by the filtersets of every app."""

from __future__ import annotations

import django_filters
from django import forms

# The range of a database id (a signed 64-bit integer, positive): a value outside it can
# match nothing, and SQLite refuses to even bind it (OverflowError), so it is a 400.
ID_MAX = 2**63 - 1


class IdField(forms.IntegerField):
    """An id: a whole number from 1 to 2⁶³ − 1."""

    def __init__(self, **kwargs: object) -> None:
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", ID_MAX)
        super().__init__(**kwargs)  # type: ignore[arg-type]


class IdFilter(django_filters.NumberFilter):
    """Filter by an id (`?job=12`); anything outside an id's range is a 400 naming it."""

    field_class = IdField
