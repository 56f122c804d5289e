"""API shapes of the maintenance app (docs/maintenance.md)."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.fleet.models import Cluster, Node
from apps.maintenance.models import MaintenanceWindow, SilencedAlert


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string", "description": "a hostlist expression, e.g. gpu[001-016]"},
            {"type": "array", "items": {"type": "string"}},
        ]
    }
)
class NodesField(serializers.Field):
    """A hostlist expression (`gpu[01-16]`) or a list of hostnames (or expressions)."""

    def to_internal_value(self, data: Any) -> str | list[str]:
        if isinstance(data, str):
            return data
        if isinstance(data, list) and all(isinstance(item, str) for item in data):
            if len(data) > 20_000:
                raise serializers.ValidationError("at most 20,000 names")
            return data
        raise serializers.ValidationError("a hostlist expression or a list of hostnames")

    def to_representation(self, value: Any) -> Any:
        return value


class WindowWriteSerializer(serializers.Serializer):
    """`POST maintenance/` body: the nodes as a hostlist or hostnames, and/or racks."""

    cluster = serializers.SlugRelatedField(slug_field="name", queryset=Cluster.objects.all())
    nodes = NodesField(
        required=False,
        allow_null=True,
        help_text="a hostlist expression (gpu[001-016]) or a list of hostnames of the cluster",
    )
    racks = serializers.ListField(
        child=serializers.CharField(max_length=64),
        required=False,
        allow_null=True,
        max_length=1000,
        help_text="racks of the cluster: all their nodes are in the window",
    )
    start = serializers.DateTimeField(
        required=False, help_text="default now; at most 5 minutes in the past"
    )
    end = serializers.DateTimeField(help_text="after start")
    reason = serializers.CharField(max_length=2000)
    confirm_jobs = serializers.ListField(
        child=serializers.IntegerField(min_value=1),
        required=False,
        allow_null=True,
        max_length=10_000,
        help_text=(
            "ids of the running jobs on the window's nodes, as the client was told them (a "
            "409's `stops_jobs`); [] confirms there are none. When they are not exactly "
            "the jobs running on the nodes: 409, nothing booked. Left out: booked, and the "
            "jobs answered in `stops_jobs`"
        ),
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs.setdefault("start", timezone.now())
        if attrs["end"] <= attrs["start"]:
            raise serializers.ValidationError({"end": ["must be after start"]})
        if not attrs.get("nodes") and not attrs.get("racks"):
            raise serializers.ValidationError(
                {"nodes": ["name at least one node (a hostlist or racks)"]}
            )
        return attrs


class WindowSerializer(serializers.ModelSerializer):
    """A window: its cluster and nodes by name, its times and where it stands (`active`:
    in progress now)."""

    cluster: serializers.SlugRelatedField[Cluster] = serializers.SlugRelatedField(
        slug_field="name", read_only=True
    )
    nodes = serializers.SerializerMethodField()
    active = serializers.SerializerMethodField()
    silenced_alerts = serializers.SerializerMethodField()

    class Meta:
        model = MaintenanceWindow
        fields = [
            "id",
            "cluster",
            "start",
            "end",
            "reason",
            "status",
            "active",
            "racks",
            "nodes",
            "created_by",
            "created_at",
            "started_at",
            "ended_at",
            "ended_by",
            "silenced_alerts",
        ]
        read_only_fields = fields

    def get_nodes(self, window: MaintenanceWindow) -> list[str]:
        """Hostnames of the window's nodes, sorted."""
        return sorted(n.hostname for n in window.nodes.all())

    def get_active(self, window: MaintenanceWindow) -> bool:
        """In progress now."""
        return window.covers(timezone.now())

    @extend_schema_field(OpenApiTypes.INT)
    def get_silenced_alerts(self, window: MaintenanceWindow) -> int:
        """How many Alertmanager alerts the window kept silenced."""
        count = getattr(window, "silenced_count", None)
        return count if count is not None else window.silenced_alerts.count()


class SilencedAlertSerializer(serializers.ModelSerializer):
    """An alert a window kept silenced."""

    node: serializers.SlugRelatedField[Node] = serializers.SlugRelatedField(
        slug_field="hostname", read_only=True
    )

    class Meta:
        model = SilencedAlert
        fields = [
            "fingerprint",
            "alertname",
            "node",
            "labels",
            "annotations",
            "status",
            "starts_at",
            "ends_at",
            "received_at",
            "deliveries",
        ]
        read_only_fields = fields


class StoppedJobSerializer(serializers.Serializer):
    """A running job on the window's nodes: its id, name, the nodes of it the window takes
    and the GPUs on them."""

    job = serializers.IntegerField(source="job.pk")
    name = serializers.CharField(source="job.name")
    nodes = serializers.ListField(child=serializers.CharField(), source="hostnames")
    gpus = serializers.IntegerField()


class WindowBookedSerializer(WindowSerializer):
    """`POST maintenance/`'s answer: the window, and the running jobs on its nodes
    (`stops_jobs`) — a window starting now opens their planned interruptions at once, a
    later one those of the jobs still running when it starts. KUAE stops no job and tells
    Slurm nothing of a window; an interruption ends when its job reports progress
    (docs/maintenance.md, Booking a window)."""

    stops_jobs = StoppedJobSerializer(many=True, read_only=True)

    class Meta(WindowSerializer.Meta):
        fields = [*WindowSerializer.Meta.fields, "stops_jobs"]
        read_only_fields = fields


class JobsNotConfirmedSerializer(serializers.Serializer):
    """The 409 of a booking whose `confirm_jobs` are not the jobs running on its nodes."""

    confirm_jobs = serializers.ListField(child=serializers.CharField())
    stops_jobs = StoppedJobSerializer(many=True)
