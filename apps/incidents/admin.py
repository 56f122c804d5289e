from django.contrib import admin

from apps.incidents.models import Delivery, Incident


@admin.register(Incident)
class IncidentAdmin(admin.ModelAdmin):
    list_display = ("id", "title", "cluster", "category", "severity", "status", "detected_at")
    list_filter = ("cluster", "category", "severity", "status", "planned")
    search_fields = ("title", "fingerprint")
    raw_id_fields = ("job", "nodes")

    def formfield_for_dbfield(self, db_field, request, **kwargs):  # noqa: ANN001, ANN201
        """`localized_at` as the pages spell it ("Localised at")."""
        field = super().formfield_for_dbfield(db_field, request, **kwargs)
        if field is not None and db_field.name == "localized_at":
            field.label = "Localised at"
        return field


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    """Who was told of what, over which channel, and whether it went out."""

    list_display = ("incident", "channel", "purpose", "status", "attempts", "sent_at", "error")
    list_filter = ("channel", "status", "purpose")
    raw_id_fields = ("incident",)
