from __future__ import annotations

from django.contrib import admin
from django.urls import reverse

from apps.common.admin_kinds import SystemWrittenAdmin
from apps.incidents.models import Delivery, Incident


@admin.register(Incident)
class IncidentAdmin(SystemWrittenAdmin):
    """Incidents, listed and viewed: they are filed and edited on their own pages, which write
    their timeline and audit trail (the list's "File an incident" leads there; "View on site"
    opens one). A mistaken one may still be deleted here."""

    list_display = ("id", "title", "cluster", "category", "severity", "status", "detected_at")
    list_filter = ("cluster", "category", "severity", "status", "planned")
    search_fields = ("title", "fingerprint")
    raw_id_fields = ("job", "nodes")

    def view_on_site(self, obj: Incident) -> str:
        """The incident's own page: its timeline, comments and actions."""
        return reverse("incident-detail", args=[obj.pk])


@admin.register(Delivery)
class DeliveryAdmin(SystemWrittenAdmin):
    """Who was told of what, over which channel, and whether it went out."""

    list_display = ("incident", "channel", "purpose", "status", "attempts", "sent_at", "error")
    list_filter = ("channel", "status", "purpose")
    raw_id_fields = ("incident",)
