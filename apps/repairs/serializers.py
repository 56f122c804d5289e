"""API shapes of the repairs app (docs/repairs.md)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.repairs.choices import Closure, RepairAction, RepairStatus
from apps.repairs.models import Repair


class StepSerializer(serializers.Serializer):
    """One step: what was done, when, by whom, a note and a ticket (RMA, vendor case)."""

    action = serializers.ChoiceField(choices=RepairAction.choices)
    at = serializers.DateTimeField(required=False, help_text="default now")
    by = serializers.CharField(
        max_length=150, required=False, allow_blank=True, help_text="default the writer"
    )
    note = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")
    ticket = serializers.CharField(max_length=200, required=False, allow_blank=True)


class RepairWriteSerializer(serializers.Serializer):
    """`PATCH repairs/{id}/` body: the steps (the whole list, replacing it) and/or the
    reason. The status moves by returning the node, not here."""

    steps = serializers.ListField(child=StepSerializer(), required=False, max_length=500)
    reason = serializers.CharField(max_length=2000, required=False, allow_blank=True)
    status = serializers.ChoiceField(choices=RepairStatus.choices, required=False)

    def validate_status(self, value: str) -> str:
        repair = self.context.get("repair")
        if repair is not None and value != repair.status:
            raise serializers.ValidationError(
                "moves by returning the node (POST nodes/{hostname}/return/), not by editing"
            )
        return value


def flat_errors(errors: Any, prefix: str = "") -> dict[str, list[str]]:
    """DRF's nested errors as `{"steps[2].action": [...]}`: each key names the field."""
    out: dict[str, list[str]] = {}
    if isinstance(errors, dict):
        for key, value in errors.items():
            if isinstance(key, int):
                name = f"{prefix}[{key}]"
            else:
                name = f"{prefix}.{key}" if prefix else str(key)
            out.update(flat_errors(value, name))
    elif isinstance(errors, list) and errors and all(isinstance(e, dict | list) for e in errors):
        for i, value in enumerate(errors):
            if value:
                out.update(flat_errors(value, f"{prefix}[{i}]"))
    else:
        out[prefix or "non_field_errors"] = [
            str(e) for e in (errors if isinstance(errors, list) else [errors])
        ]
    return out


class RepairStepSerializer(serializers.Serializer):
    """A step as stored."""

    action = serializers.CharField()
    at = serializers.DateTimeField()
    by = serializers.CharField()
    note = serializers.CharField()
    ticket = serializers.CharField(required=False)


class RepairIncidentSerializer(serializers.Serializer):
    """An incident open on the node when it was taken out."""

    id = serializers.IntegerField()
    title = serializers.CharField()
    severity = serializers.CharField()
    status = serializers.CharField()


class RepairEvidenceSerializer(serializers.Serializer):
    """A failing (or warning) check result that put the node out."""

    kind = serializers.CharField()
    target = serializers.CharField()
    status = serializers.CharField()
    message = serializers.CharField()
    at = serializers.DateTimeField()


class ClosureField(serializers.ChoiceField):
    """How a repair closed, or null while it is not closed (stored as "", which is none of
    the documented values)."""

    def to_representation(self, value: Any) -> Any:  # noqa: ANN401 — null or a value
        return None if value in ("", None) else str(super().to_representation(value))


class RepairSerializer(serializers.ModelSerializer):
    """A repair: the node, why it went out (reason, incidents, evidence), the steps, and its
    return (burn-in status and note, how it closed)."""

    node = serializers.CharField(source="node.hostname", read_only=True)
    cluster = serializers.CharField(source="node.cluster.name", read_only=True)
    node_state = serializers.CharField(source="node.state", read_only=True)
    incidents = serializers.SerializerMethodField()
    steps = serializers.SerializerMethodField()
    evidence = serializers.SerializerMethodField()
    closed_how = ClosureField(
        choices=Closure.choices,
        allow_null=True,
        read_only=True,
        help_text="null until the repair closes",
    )

    class Meta:
        model = Repair
        fields = [
            "id",
            "node",
            "cluster",
            "node_state",
            "opened_at",
            "reason",
            "incidents",
            "evidence",
            "steps",
            "status",
            "return_requested_at",
            "return_requested_by",
            "skip_burn_in",
            "burn_in_note",
            "burn_in_checked_at",
            "closed_at",
            "closed_how",
            "closed_by",
        ]
        read_only_fields = fields

    @extend_schema_field(RepairIncidentSerializer(many=True))
    def get_incidents(self, repair: Repair) -> list[dict[str, Any]]:
        """The incidents naming the node that were open when it went out."""
        return [
            {"id": i.pk, "title": i.title, "severity": i.severity, "status": i.status}
            for i in repair.incidents.all()
        ]

    @extend_schema_field(RepairStepSerializer(many=True))
    def get_steps(self, repair: Repair) -> list[dict[str, Any]]:
        """The steps in the order they were done."""
        return list(repair.steps)

    @extend_schema_field(RepairEvidenceSerializer(many=True))
    def get_evidence(self, repair: Repair) -> list[dict[str, Any]]:
        """The failing check results that put the node out."""
        return list(repair.evidence)


class ReturnSerializer(serializers.Serializer):
    """`POST nodes/{hostname}/return/` body (all optional; `?skip_burn_in=1` works too)."""

    skip_burn_in = serializers.BooleanField(required=False, default=False)
