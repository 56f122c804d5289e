"""Admin classes for records the admin must not add or edit by hand
(docs/operations.md, The admin): what only the system writes — check results, GPUs, jobs,
deliveries — and history, which nobody edits or deletes. Adding one by hand would skip the
service that writes it (an incident's timeline, a node's state, who paused automation)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest


class SystemWrittenAdmin(admin.ModelAdmin):
    """Listed and viewed, never added or edited here: the system writes these rows. A stale
    one may still be deleted."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:  # noqa: ANN401
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:  # noqa: ANN401
        return False


class HistoryAdmin(SystemWrittenAdmin):
    """History: listed and viewed only — nobody adds, edits or deletes what happened."""

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:  # noqa: ANN401
        return False
