"""What every list page does with its query string: filter, sort, paginate, keep the URL.
Filtering and sorting are the list's filterset's (a `SortedFilterSet`, the same one its API
uses), so a page and its API sort by the same `?sort=` keys."""

from __future__ import annotations

from typing import Any

from django.core.paginator import Paginator
from django.http import HttpRequest

from apps.common.filters import SortedFilterSet


def list_page(
    request: HttpRequest, filterset: SortedFilterSet, *, per_page: int = 100
) -> dict[str, Any]:
    """Context for a list page: the filter, the sorted page, the key it is sorted by, and the
    query strings that keep filters in the URL (`query` without the page, `sort_query`
    without the sort too)."""
    page = Paginator(filterset.qs, per_page).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    sort_query = query.copy()
    for name in ("sort", *SortedFilterSet.ALIASES):
        sort_query.pop(name, None)
    return {
        "filter": filterset,
        "page": page,
        "sort": filterset.sort_key,
        "query": query.urlencode(),
        "sort_query": sort_query.urlencode(),
    }
