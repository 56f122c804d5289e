"""What every list page does with its query string: filter, sort, paginate, keep the URL."""

from __future__ import annotations

from typing import Any

from django.core.paginator import Paginator
from django.http import HttpRequest


def list_page(
    request: HttpRequest,
    filterset: Any,
    *,
    sorts: dict[str, str],
    default_sort: str,
    tiebreak: str,
    per_page: int = 100,
) -> dict[str, Any]:
    """Context for a list page: the filter, the sorted page, and the query strings that keep
    filters in the URL (`query` without the page, `sort_query` without the sort too)."""
    sort = request.GET.get("sort", default_sort)
    qs = filterset.qs.order_by(sorts.get(sort, sorts[default_sort]), tiebreak)
    page = Paginator(qs, per_page).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    sort_query = query.copy()
    sort_query.pop("sort", None)
    return {
        "filter": filterset,
        "page": page,
        "sort": sort,
        "query": query.urlencode(),
        "sort_query": sort_query.urlencode(),
    }
