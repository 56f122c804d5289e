"""Template context for every page: clusters whose automation is paused (docs/on-call.md)."""

from __future__ import annotations

from django.http import HttpRequest

from apps.fleet.models import Cluster


def automation(request: HttpRequest) -> dict[str, object]:
    """`paused_clusters`: each paused cluster with who paused it, when and why — lazily, so
    a page that never shows the banner (an API error page) never queries."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}

    def paused() -> list[Cluster]:
        return list(
            Cluster.objects.filter(automation_paused=True).only(
                "name", "automation_reason", "automation_by", "automation_at"
            )
        )

    return {"paused_clusters": paused}
