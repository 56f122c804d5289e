"""API shapes for check runs and results (docs/api.md, Health)."""

from __future__ import annotations

import datetime as dt

from drf_spectacular.utils import extend_schema_field
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
    """A target's current result. How fresh it is is `judged_at`, its check kind's last
    completed run on the cluster; `at` is when a run last wrote it (docs/checks.md, How a
    check run works)."""

    cluster = ClusterNameField(read_only=True)
    # from the view's context: `judged`, (cluster id, kind) → that time (one query a page)
    judged_at = serializers.SerializerMethodField(
        help_text="when this check kind last judged the cluster: the start of its newest "
        "completed (done) run, the time the verdict holds as of; null before one has"
    )

    class Meta:
        model = CheckResult
        fields = [
            "kind",
            "target",
            "status",
            "message",
            "details",
            "at",
            "since",
            "judged_at",
            "cluster",
        ]
        read_only_fields = fields
        extra_kwargs = {
            "at": {
                "help_text": "when a run last wrote this result: every run for a warn or "
                "fail, only on a change for a pass — so a pass's `at` is when it began, not "
                "when it was last judged (that is `judged_at`)"
            },
            "since": {"help_text": "when the current status began"},
        }

    @extend_schema_field(serializers.DateTimeField(allow_null=True))
    def get_judged_at(self, result: CheckResult) -> dt.datetime | None:
        judged = self.context.get("judged") or {}
        return judged.get((result.cluster_id, result.kind))


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
