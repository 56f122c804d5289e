"""The health pages' words for a check's kind, read from its plug-in."""

from __future__ import annotations

from django import template

from apps.health.checks import kind_label
from apps.health.pipeline import PipelineStatus, pipeline_status_cached, unverified_words

register = template.Library()


@register.filter
def check_label(kind: str) -> str:
    """`gpu_errors` → 'GPU errors (ECC/XID)'."""
    return str(kind_label(kind))


@register.simple_tag(takes_context=True)
def unverified(context: template.Context, node: object) -> str:
    """The words " (unverified: checks stale 4 min)" for a healthy node while its
    cluster's heartbeat check is stale, else ""
    (docs/operations.md, Watching the watcher): a qualifier, not a state. Reads the
    page's cached pipeline status."""
    if getattr(node, "state", None) != "healthy":
        return ""
    status = context.get("pipeline")
    status = status() if callable(status) else status
    if not isinstance(status, PipelineStatus):
        status = pipeline_status_cached()
    words = unverified_words(status, node.cluster.name)  # type: ignore[attr-defined]
    return f" ({words})" if words else ""
