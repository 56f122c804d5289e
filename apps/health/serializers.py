"""API shapes for check runs and results (docs/api.md, Health)."""

from __future__ import annotations

from rest_framework import serializers

from apps.fleet.fields import ClusterNameField
from apps.health.checks import LABELS, SCHEDULED_KINDS
from apps.health.models import CheckResult, CheckRun


class RunRequestSerializer(serializers.Serializer):
    """`POST health/run/` body."""

    cluster = ClusterNameField()
    checks = serializers.ListField(
        child=serializers.ChoiceField(choices=[(k, LABELS[k]) for k in SCHEDULED_KINDS]),
        required=False,
        allow_empty=False,
    )


class RunSerializer(serializers.ModelSerializer):
    """A check run."""

    cluster = ClusterNameField(read_only=True)

    class Meta:
        model = CheckRun
        fields = [
            "id",
            "kind",
            "cluster",
            "status",
            "started_at",
            "duration_s",
            "counts",
            "error",
            "queued_at",
            "requested_by",
        ]
        read_only_fields = fields


class ResultSerializer(serializers.ModelSerializer):
    """A target's current result."""

    cluster = ClusterNameField(read_only=True)

    class Meta:
        model = CheckResult
        fields = ["kind", "target", "status", "message", "details", "at", "since", "cluster"]
        read_only_fields = fields


class PreflightSerializer(serializers.Serializer):
    """`{ok, problems: [{node, reason}]}`; to an agent token `{ok, problems: [{node}]}`."""

    ok = serializers.BooleanField()
    problems = serializers.ListField(
        child=serializers.DictField(),
        help_text="`{node, reason}` per problem; an agent token is told only the names of "
        "the nodes that fail, `{node}` once each, not their states or evidence",
    )


class AdmissionProblemSerializer(serializers.Serializer):
    """One reason a node may not take a job: its state, or a failing result."""

    kind = serializers.CharField(help_text="`state`, or the failing check's kind")
    target = serializers.CharField(help_text="`node:HOST` or `gpu:HOST/INDEX`")
    reason = serializers.CharField()


class AdmissionSerializer(serializers.Serializer):
    """`GET nodes/{hostname}/admission/`: `{ok, state, problems: [{kind, target, reason}]}`."""

    ok = serializers.BooleanField(help_text="healthy and no current fail result")
    state = serializers.CharField()
    problems = AdmissionProblemSerializer(many=True)
