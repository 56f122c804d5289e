"""The health pages' words for a check's kind, read from its plug-in."""

from __future__ import annotations

from django import template

from apps.health.checks import kind_label

register = template.Library()


@register.filter
def check_label(kind: str) -> str:
    """`gpu_errors` → 'GPU errors (ECC/XID)'."""
    return kind_label(kind)
