"""The report API's inputs and answers, typed: the query parameters each endpoint takes
and the shape of what it returns (so the OpenAPI document describes every answer)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.utils import timezone
from rest_framework import serializers

from apps.common.weeks import last_complete_week, parse_week
from apps.fleet.models import Cluster

DEFAULT_WINDOW = dt.timedelta(days=30)


def _number(**kwargs: Any) -> serializers.FloatField:
    return serializers.FloatField(**kwargs)


def _maybe(**kwargs: Any) -> serializers.FloatField:
    """A figure that is null when it cannot be computed (no interruption, no job)."""
    return serializers.FloatField(allow_null=True, **kwargs)


# --- inputs ---------------------------------------------------------------------------


class ClusterQuerySerializer(serializers.Serializer):
    """`?cluster=NAME`; may be left out when there is exactly one cluster."""

    cluster = serializers.CharField(required=False, max_length=64)

    def validate_cluster(self, value: str) -> str:
        """No NUL (the database cannot hold one)."""
        if "\x00" in value:
            raise serializers.ValidationError("must not contain a NUL character")
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Resolve the cluster: the one named, else the only one."""
        name = attrs.get("cluster")
        if name:
            cluster = Cluster.objects.filter(name=name).first()
            if cluster is None:
                raise serializers.ValidationError({"cluster": [f"unknown cluster {name!r}"]})
        else:
            clusters = list(Cluster.objects.all()[:2])
            if len(clusters) != 1:
                raise serializers.ValidationError(
                    {"cluster": ["required (there is more than one cluster, or none)"]}
                )
            cluster = clusters[0]
        return {**attrs, "cluster": cluster, "now": timezone.now()}


class WindowQuerySerializer(ClusterQuerySerializer):
    """`cluster`, `start`, `end` (default: the last 30 days)."""

    start = serializers.DateTimeField(required=False)
    end = serializers.DateTimeField(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Defaults, and end after start."""
        attrs = super().validate(attrs)
        attrs.setdefault("end", attrs["now"])
        attrs.setdefault("start", attrs["now"] - DEFAULT_WINDOW)
        if attrs["end"] <= attrs["start"]:
            raise serializers.ValidationError({"end": ["must be after start"]})
        return attrs


class ReliabilityQuerySerializer(WindowQuerySerializer):
    """The window, and the size of the job whose interruptions are projected."""

    job_nodes = serializers.IntegerField(
        required=False,
        default=128,
        min_value=1,
        max_value=1_000_000,
        help_text="nodes of the projected job",
    )


class WeeklyQuerySerializer(ClusterQuerySerializer):
    """`cluster` and `week` (an ISO week; default the last complete one)."""

    week = serializers.CharField(
        required=False, max_length=16, help_text="ISO week, e.g. 2026-W47; from 2000-W01 on"
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """The week's Monday as `start`; a week that has not begun is refused."""
        attrs = super().validate(attrs)
        text = attrs.get("week")
        if not text:
            return {**attrs, "start": last_complete_week(attrs["now"])}
        try:
            start = parse_week(text)
        except ValueError as exc:
            raise serializers.ValidationError({"week": [str(exc)]}) from exc
        if start > attrs["now"]:
            raise serializers.ValidationError({"week": ["is in the future"]})
        return {**attrs, "start": start}


# --- answers --------------------------------------------------------------------------


class CategoryShareSerializer(serializers.Serializer):
    """Unexpected interruptions of one category."""

    category = serializers.CharField()
    count = serializers.IntegerField()
    share = _number()


class ReliabilitySerializer(serializers.Serializer):
    """Cluster, node and projected-job MTBF, MTTR/MTTD/MTTL, failure rate, causes
    (docs/formulas.md, Reliability)."""

    cluster = serializers.CharField()
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    hours = _number()
    interruptions = serializers.IntegerField()
    planned_interruptions = serializers.IntegerField()
    mtbf_hours = _maybe(help_text="cluster MTBF")
    mtbf_level = serializers.CharField()
    mttr_minutes = _maybe()
    mttd_minutes = _maybe()
    mttl_minutes = _maybe()
    node_days = _number()
    node_failures = serializers.IntegerField()
    failure_rate_per_1000_node_days = _maybe()
    node_mtbf_hours = _maybe(help_text="node MTBF")
    job_nodes = serializers.IntegerField()
    projected_job_mttf_hours = _maybe(help_text="job MTBF for a job of job_nodes nodes")
    by_category = CategoryShareSerializer(many=True)


class LostHoursSerializer(serializers.Serializer):
    """Lost GPU-hours by cause; where causes overlap the instant counts once."""

    downtime = _number()
    planned = _number()
    rework = _number()
    checkpoint = _number()


class DowntimeBreakdownSerializer(serializers.Serializer):
    """The failures' downtime GPU-hours cut at detection, localisation and mitigation; the
    four sum to lost_gpu_hours.downtime (docs/formulas.md, Where the downtime went)."""

    detect = _number(help_text="from the failure to detected_at")
    localise = _number(help_text="from detected_at to localized_at")
    mitigate = _number(help_text="from localized_at to mitigated_at")
    restart = _number(help_text="from mitigated_at to training resumed (recovered_at)")


class RecoveryMinutesSerializer(serializers.Serializer):
    """Minutes from the failure to recovered_at over the week's recovered unexpected
    interruptions; null when none (docs/formulas.md, How long recovery took)."""

    p50 = _maybe(help_text="median")
    p90 = _maybe(help_text="90th percentile, linear between the closest ranks")
    max = _maybe(help_text="the longest")


class WeeklyJobSerializer(serializers.Serializer):
    """One job's week."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    gpu_count = serializers.IntegerField()
    wall_hours = _number()
    lost_hours = _number()
    effective_rate = _maybe()
    mean_mfu = _maybe()
    lost_gpu_hours = LostHoursSerializer()


class TargetsSerializer(serializers.Serializer):
    """The cluster's floors."""

    effective_rate = _number()
    mtbf_hours = _number()
    availability = _number()
    mean_mfu = _number()


class LostByCategorySerializer(serializers.Serializer):
    """The week's lost GPU-hours of one incident category."""

    category = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]  # a field, not Field.label
    count = serializers.IntegerField()
    lost_gpu_hours = _number()


class WeeklyIncidentSerializer(serializers.Serializer):
    """An incident behind the week's lost hours: its own cost and the week's share."""

    id = serializers.IntegerField()
    title = serializers.CharField()
    category = serializers.CharField()
    severity = serializers.CharField()
    status = serializers.CharField()
    planned = serializers.BooleanField()
    recovered = serializers.BooleanField()
    downtime_s = _number()
    rework_s = _number()
    lost_gpu_hours = _number()
    week_lost_gpu_hours = _number()


class WeeklySerializer(serializers.Serializer):
    """The weekly report of one ISO week (`complete` false for a week still in progress;
    docs/formulas.md, Weekly effective training rate)."""

    cluster = serializers.CharField()
    week = serializers.CharField()
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    complete = serializers.BooleanField()
    effective_rate = _maybe()
    scheduled_gpu_hours = _number()
    productive_gpu_hours = _number()
    lost_gpu_hours = LostHoursSerializer()
    downtime_breakdown_gpu_hours = DowntimeBreakdownSerializer()
    mean_mfu = _maybe()
    jobs = WeeklyJobSerializer(many=True)
    phase_gpu_hours = serializers.DictField(
        child=_number(),
        help_text="{name: GPU-hours} of the phases inside the week (time in the run not "
        "spent training); not part of effective_rate",
    )
    interruptions = serializers.IntegerField()
    planned_interruptions = serializers.IntegerField()
    mtbf_hours = _maybe(help_text="cluster MTBF over the week")
    mtbf_level = serializers.CharField()
    mttr_minutes = _maybe()
    recovery_minutes = RecoveryMinutesSerializer()
    availability = _maybe()
    targets = TargetsSerializer()
    mfu_reference = _number(help_text="the best public MFU, a reference line, not a target")
    lost_by_category = LostByCategorySerializer(many=True)
    incidents = WeeklyIncidentSerializer(many=True)


class NodeAvailabilitySerializer(serializers.Serializer):
    """One node's availability over the window."""

    hostname = serializers.CharField()
    gpu_count = serializers.IntegerField()
    in_service_hours = _number()
    unavailable_hours = _number()
    availability = _maybe()


class AvailabilitySerializer(serializers.Serializer):
    """The GPU-weighted availability of the cluster and of each node
    (docs/formulas.md, GPU availability)."""

    cluster = serializers.CharField()
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    availability = _maybe()
    by_node = NodeAvailabilitySerializer(many=True)
