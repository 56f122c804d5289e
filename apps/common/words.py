"""Counted nouns in sentences built in Python: "1 rack", "2 racks" — never "1 racks" or
"rack(s)" (templates use Django's `pluralize`; this is its Python side, Django's ngettext)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

from django.utils.translation import ngettext

if TYPE_CHECKING:
    from django.utils.functional import _StrPromise

    # Text a person reads: a string, or one marked for translation and read in the active
    # language when shown (gettext_lazy).
    Words: TypeAlias = str | _StrPromise
else:
    Words = str


def counted(n: int, singular: str, plural: str = "") -> str:
    """`n` and the noun in the number it takes, the number as the `num` filter writes it
    (thousands separated): counted(1, "rack") → "1 rack", counted(1200, "run") → "1,200 runs"."""
    return f"{n:,} {ngettext(singular, plural or f'{singular}s', n)}"
