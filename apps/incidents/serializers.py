"""API shapes for incidents (docs/api.md, Incidents)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from rest_framework import serializers

from apps.common.fields import NodeNameField
from apps.fleet.fields import ClusterNameField
from apps.fleet.models import Node
from apps.fleet.validators import nodes_of_cluster
from apps.incidents.choices import Category, IncidentStatus, Severity
from apps.incidents.models import Incident, TimelineEntry, UnroutedAlert
from apps.incidents.selectors import nodes_not_of_job
from apps.jobs.models import Job


class TimelineSerializer(serializers.ModelSerializer):
    """One timeline line."""

    class Meta:
        model = TimelineEntry
        fields = ["at", "actor", "kind", "text"]
        read_only_fields = fields


class IncidentSerializer(serializers.ModelSerializer):
    """An incident as the API answers it; `nodes` are hostnames, `job` the job's id."""

    cluster = ClusterNameField(read_only=True)
    nodes: serializers.SlugRelatedField[Node] = serializers.SlugRelatedField(
        slug_field="hostname", many=True, read_only=True
    )
    component = serializers.SerializerMethodField(
        help_text="the switch, PDU or NVLink domain whose nodes failed together "
        "(docs/checks.md, Blast radius): `switch:leaf-07`, `pdu:…`, `nvlink_domain:…`; "
        '"" for any other incident'
    )

    class Meta:
        model = Incident
        fields = [
            "id",
            "title",
            "cluster",
            "category",
            "severity",
            "status",
            "occurred_at",
            "detected_at",
            "localized_at",
            "mitigated_at",
            "restarted_at",
            "restored_at",
            "recovered_at",
            "caught_up_at",
            "resolved_at",
            "job",
            "nodes",
            "interrupts_job",
            "planned",
            "description",
            "assignee",
            "acknowledged_at",
            "acknowledged_by",
            "escalated_at",
            "source",
            "component",
            "details",
            "created_at",
            "updated_at",
            "downtime_s",
            "rework_s",
            "lost_gpu_hours",
        ]
        read_only_fields = fields

    def get_component(self, incident: Incident) -> str:
        """`details.component`, set on a blast-radius incident."""
        value = (incident.details or {}).get("component")
        return value if isinstance(value, str) else ""


class IncidentDetailSerializer(IncidentSerializer):
    """An incident with its timeline."""

    timeline = TimelineSerializer(many=True, read_only=True)

    class Meta(IncidentSerializer.Meta):
        fields = [*IncidentSerializer.Meta.fields, "timeline"]
        read_only_fields = fields


class IncidentWriteSerializer(serializers.Serializer):
    """`POST incidents/` and `PATCH incidents/{id}/` body."""

    title = serializers.CharField(max_length=300)
    cluster = ClusterNameField()
    category = serializers.ChoiceField(choices=Category.choices)
    severity = serializers.ChoiceField(choices=Severity.choices)
    status = serializers.ChoiceField(choices=IncidentStatus.choices, required=False)
    occurred_at = serializers.DateTimeField(required=False, allow_null=True)
    detected_at = serializers.DateTimeField()
    localized_at = serializers.DateTimeField(required=False, allow_null=True)
    recovered_at = serializers.DateTimeField(required=False, allow_null=True)
    resolved_at = serializers.DateTimeField(required=False, allow_null=True)
    mitigated_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text="the first node state change or actuation it caused (docs/incidents.md)",
    )
    restarted_at = serializers.DateTimeField(
        required=False, allow_null=True, help_text="the job's next attempt started"
    )
    restored_at = serializers.DateTimeField(
        required=False, allow_null=True, help_text="the new attempt's checkpoint restore ended"
    )
    caught_up_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text="the job's progress first passed the step it had reached at the failure",
    )
    job = serializers.PrimaryKeyRelatedField(
        queryset=Job.objects.all(), required=False, allow_null=True
    )
    nodes = serializers.ListField(child=NodeNameField(), required=False, max_length=20_000)
    interrupts_job = serializers.BooleanField()
    planned = serializers.BooleanField()
    description = serializers.CharField(required=False, allow_blank=True)
    assignee = serializers.CharField(
        max_length=150, required=False, allow_blank=True, help_text="a username; blank: nobody"
    )

    def validate_assignee(self, value: str) -> str:
        if value and not get_user_model().objects.filter(username=value, is_active=True).exists():
            raise serializers.ValidationError(f"no user {value!r}")
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        cluster = attrs.get("cluster") or getattr(self.instance, "cluster", None)
        if (
            self.instance is not None
            and "cluster" in attrs
            and attrs["cluster"] != self.instance.cluster
        ):
            raise serializers.ValidationError(
                {"cluster": ["an incident cannot move to another cluster"]}
            )
        job = attrs.get("job")
        if job is not None and cluster is not None and job.cluster_id != cluster.pk:
            raise serializers.ValidationError(
                {"job": [f"job {job.pk} is not in cluster {cluster.name}"]}
            )
        if "nodes" in attrs and cluster is not None:
            attrs["nodes"] = nodes_of_cluster(cluster=cluster, hostnames=attrs["nodes"])
        if "job" in attrs or "nodes" in attrs:  # another job's nodes are refused, never kept
            job = attrs["job"] if "job" in attrs else getattr(self.instance, "job", None)
            nodes = (
                attrs["nodes"]
                if "nodes" in attrs
                else list(self.instance.nodes.all())
                if self.instance is not None
                else []
            )
            wrong = nodes_not_of_job(job=job, nodes=nodes) if job is not None else ""
            if wrong:
                raise serializers.ValidationError({"nodes": [wrong]})
        return attrs


class ActionItemSerializer(serializers.Serializer):
    """`{text, owner, due, done}`; owner is a username."""

    text = serializers.CharField(max_length=2000)
    owner = serializers.CharField(max_length=150)
    due = serializers.DateField(required=False, allow_null=True)
    done = serializers.BooleanField(required=False, default=False)


class TimelineItemSerializer(serializers.Serializer):
    """`{at, text}`."""

    at = serializers.DateTimeField()
    text = serializers.CharField(max_length=2000)


class PostmortemSerializer(serializers.Serializer):
    """`GET/PUT incidents/{id}/postmortem/`."""

    summary = serializers.CharField(allow_blank=True)
    root_cause = serializers.CharField(allow_blank=True)
    category = serializers.ChoiceField(choices=Category.choices)
    timeline = TimelineItemSerializer(many=True, required=False)
    contributing_factors = serializers.CharField(allow_blank=True, required=False, default="")
    action_items = ActionItemSerializer(many=True, required=False)
    status = serializers.CharField(read_only=True)
    author = serializers.CharField(
        read_only=True, source="author.username", default=None, allow_null=True
    )
    reviewer = serializers.CharField(
        read_only=True, source="reviewer.username", default=None, allow_null=True
    )
    review_comment = serializers.CharField(read_only=True)


class ReviewSerializer(serializers.Serializer):
    """`{comment?}` for submit, approve, reject."""

    comment = serializers.CharField(required=False, allow_blank=True, default="", max_length=5000)


class UnroutedAlertSerializer(serializers.ModelSerializer):
    """An Alertmanager alert kept without an incident (`alerts/unrouted/`;
    docs/alertmanager.md, Unrouted alerts)."""

    class Meta:
        model = UnroutedAlert
        fields = [
            "fingerprint",
            "labels",
            "annotations",
            "status",
            "starts_at",
            "ends_at",
            "received_at",
            "first_received_at",
            "deliveries",
            "reason",
        ]
        read_only_fields = fields


class AlertmanagerResultSerializer(serializers.Serializer):
    """What one webhook did with its alerts."""

    opened = serializers.IntegerField(help_text="new incidents")
    updated = serializers.IntegerField(help_text="alerts already on an open incident")
    reopened = serializers.IntegerField(help_text="incidents resolved while still firing")
    folded = serializers.IntegerField(help_text="alerts joined to a check's open incident")
    resolved = serializers.IntegerField()
    unrouted = serializers.IntegerField(help_text="kept: no known node or cluster")
    deferred = serializers.IntegerField(
        help_text="kept as unrouted: over 200 incidents opened by this webhook"
    )
    silenced = serializers.IntegerField(
        help_text="kept on a maintenance window in progress on their node: no incident"
    )
    ignored = serializers.IntegerField(help_text="stale or repeated copies")
