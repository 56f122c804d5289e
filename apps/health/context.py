"""Template context for every page: whether KUAE's own pipeline is stale
(docs/operations.md, Watching the watcher)."""

from __future__ import annotations

from django.http import HttpRequest

from apps.health.pipeline import PipelineStatus, pipeline_status_cached, stale_words


def pipeline(request: HttpRequest) -> dict[str, object]:
    """`pipeline_stale`: the red banner's words, or None while every part detection depends
    on is fresh; `pipeline`: the status. Lazily, so a page that never shows the banner never
    queries, and from a 10-second cache, so pages read it cheaply."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    memo: dict[str, PipelineStatus] = {}

    def status() -> PipelineStatus:
        if "status" not in memo:
            memo["status"] = pipeline_status_cached()
        return memo["status"]

    return {"pipeline": status, "pipeline_stale": lambda: stale_words(status())}
