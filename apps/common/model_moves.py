"""A model moved from one app to another keeps its content type (and with it its
permissions and admin log entries): the migration that takes the model over runs
`content_types_move(...)`. Used by the migrations that move models between apps."""

from __future__ import annotations

from typing import Any

from django.db import migrations


def content_types_move(models: tuple[str, ...], source: str, target: str) -> migrations.RunPython:
    """A reversible operation that relabels the content types of `models` (lower-case model
    names) from app `source` to `target`, and back when unapplied. A database that has none
    yet (content types are made after migrating) needs nothing; one that already has the
    target's keeps it."""

    def move(frm: str, to: str) -> Any:
        def run(apps: Any, schema_editor: Any) -> None:
            content_type = apps.get_model("contenttypes", "ContentType")
            taken = set(
                content_type.objects.filter(app_label=to, model__in=models).values_list(
                    "model", flat=True
                )
            )
            content_type.objects.filter(app_label=frm, model__in=set(models) - taken).update(
                app_label=to
            )
            content_type.objects.clear_cache()

        return run

    return migrations.RunPython(move(source, target), move(target, source))
