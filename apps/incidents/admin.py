from django.contrib import admin

from apps.incidents.models import Incident


@admin.register(Incident)
class IncidentAdmin(admin.ModelAdmin):
    list_display = ("id", "title", "cluster", "category", "severity", "status", "detected_at")
    list_filter = ("cluster", "category", "severity", "status", "planned")
    search_fields = ("title", "fingerprint")
    raw_id_fields = ("job", "nodes")
