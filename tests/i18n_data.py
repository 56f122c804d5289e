"""The fleet's own text, which a Chinese page shows as it was written
(docs/pages.md, Language): every value of a text field without choices in the database —
hostnames, names, titles, the messages checks and people wrote. A page test passes it to
`tests.i18n_pages.english_left` as the page's data."""

from __future__ import annotations

import re

from django.apps import apps
from django.db import models

_LETTERS = re.compile(r"[A-Za-z]{2,}")


def stored_words() -> set[str]:
    """Every value of every text field without choices, in every model of KUAE's apps."""
    words: set[str] = set()
    for model in apps.get_models():
        if not model.__module__.startswith("apps."):
            continue  # Django's own tables (permissions, sessions) are not the fleet's
        fields = [
            f.attname
            for f in model._meta.concrete_fields
            if isinstance(f, models.CharField | models.TextField) and not f.choices
        ]
        if fields:
            for row in model.objects.values_list(*fields).iterator():
                for value in row:
                    if value:
                        # the whole value, and its runs of letters: `llama` of `llama-70b`
                        words.add(value)
                        words.update(_LETTERS.findall(value))
    return words
