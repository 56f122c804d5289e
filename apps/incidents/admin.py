from django.contrib import admin

from apps.incidents.models import Delivery, Incident


@admin.register(Incident)
class IncidentAdmin(admin.ModelAdmin):
    list_display = ("id", "title", "cluster", "category", "severity", "status", "detected_at")
    list_filter = ("cluster", "category", "severity", "status", "planned")
    search_fields = ("title", "fingerprint")
    raw_id_fields = ("job", "nodes")


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    """Who was told of what, over which channel, and whether it went out."""

    list_display = ("incident", "channel", "purpose", "status", "attempts", "sent_at", "error")
    list_filter = ("channel", "status", "purpose")
    raw_id_fields = ("incident",)
