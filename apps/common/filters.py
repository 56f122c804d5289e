"""Filter fields shared by the filtersets of every app, and the sorting every list shares."""

from __future__ import annotations

from typing import Any

import django_filters
from django import forms
from django.db.models import QuerySet
from django.http import QueryDict

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


class SortFilter(django_filters.OrderingFilter):
    """`?sort=` on a list page and on its API alike. `fields`, pairs of (field or annotation,
    the key people use), is the one declaration of the list's sortable columns; `-key`
    sorts descending, `a,b` by both. `default` sorts a list asked for no (valid) key, and
    `tiebreak` comes last so that pages are stable."""

    def __init__(self, *, default: str, tiebreak: str, **kwargs: Any) -> None:
        kwargs.setdefault("label", "Sort")
        super().__init__(**kwargs)
        self.default = default
        self.tiebreak = tiebreak

    def filter(self, qs: QuerySet, value: list[str] | None) -> QuerySet:
        """Order by the keys asked for, else the default; then the tiebreak."""
        keys = [key for key in value or () if key] or [self.default]
        return qs.order_by(*(self.get_ordering_value(key) for key in keys), self.tiebreak)


class SortedFilterSet(django_filters.FilterSet):
    """A filterset whose `sort` is a `SortFilter`, the list's one ordering for its page and
    its API. An unknown key sorts by the default on a page (the API answers 400, naming
    `sort`). `?order=`, the incidents API's former name for it, is read as `sort`."""

    ALIASES = {"order": "sort"}

    def __init__(self, data: QueryDict | None = None, *args: Any, **kwargs: Any) -> None:
        if data is not None:
            for alias, name in self.ALIASES.items():
                if alias in data and name not in data:
                    data = data.copy()
                    data.setlist(name, data.getlist(alias))
        super().__init__(data, *args, **kwargs)

    def filter_queryset(self, queryset: QuerySet) -> QuerySet:
        """Filter, then sort (an invalid `sort` is left out of the form: the default)."""
        queryset = super().filter_queryset(queryset)
        if "sort" not in self.form.cleaned_data:
            queryset = self.filters["sort"].filter(queryset, None)
        return queryset

    @property
    def sort_key(self) -> str:
        """The key the list is sorted by first (asked for, else the default), for headings."""
        self.is_valid()  # cleans the form once; another field's error leaves `sort` clean
        keys = getattr(self.form, "cleaned_data", {}).get("sort")
        return keys[0] if keys else self.filters["sort"].default
