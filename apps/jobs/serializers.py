"""API shapes for jobs and checkpoints (docs/api.md, Jobs)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.common.timeutil import not_future
from apps.fleet.fields import ClusterNameField
from apps.fleet.serializers import IncidentRefSerializer
from apps.fleet.validators import nodes_of_cluster
from apps.jobs.choices import JobCondition, JobStatus
from apps.jobs.models import Checkpoint, Job
from apps.jobs.readers import OK, JobIncidents


class JobSerializer(serializers.ModelSerializer):
    """A job as the API answers it; `nodes` are hostnames, `condition` and `open_incidents`
    what its open incidents say (docs/incidents.md, A job's condition) — both filled by the view for
    a whole page in a fixed number of queries. `mfu_now` is 0 while the job is hung or
    interrupted."""

    cluster = ClusterNameField(read_only=True)
    nodes = serializers.SerializerMethodField()
    condition = serializers.SerializerMethodField()
    open_incidents = serializers.SerializerMethodField()
    mfu_now = serializers.SerializerMethodField()

    class Meta:
        model = Job
        fields = [
            "id",
            "cluster",
            "name",
            "external_id",
            "submitted_at",
            "array_job_id",
            "array_task_id",
            "model_name",
            "n_params",
            "flops_per_token",
            "gpu_count",
            "nodes",
            "status",
            "started_at",
            "ended_at",
            "restart_count",
            "last_metric_at",
            "last_step",
            "progress_step",
            "progress_at",
            "last_checkpoint_at",
            "mfu_now",
            "condition",
            "open_incidents",
        ]
        read_only_fields = fields

    def get_nodes(self, job: Job) -> list[str]:
        hostnames: dict[int, list[str]] = self.context.get("hostnames", {})
        return hostnames.get(job.pk, [])

    def _incidents(self, job: Job) -> JobIncidents:
        return self.context.get("incidents", {}).get(job.pk, OK)

    @extend_schema_field(serializers.ChoiceField(choices=JobCondition.choices))
    def get_condition(self, job: Job) -> str:
        return self._incidents(job).condition

    @extend_schema_field(IncidentRefSerializer(many=True))
    def get_open_incidents(self, job: Job) -> list[dict[str, object]]:
        return list(IncidentRefSerializer(self._incidents(job).open_incidents, many=True).data)

    @extend_schema_field(serializers.FloatField(allow_null=True))
    def get_mfu_now(self, job: Job) -> float | None:
        return job.mfu_now(stopped=self._incidents(job).stopped)


class JobWriteSerializer(serializers.Serializer):
    """`POST jobs/` and `PATCH jobs/{id}/` body."""

    name = serializers.CharField(max_length=200)
    cluster = ClusterNameField()
    external_id = serializers.CharField(max_length=64, required=False, allow_blank=True)
    model_name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    n_params = serializers.FloatField(min_value=0, required=False, allow_null=True)
    flops_per_token = serializers.FloatField(min_value=0, required=False, allow_null=True)
    gpu_count = serializers.IntegerField(min_value=1, max_value=10_000_000)
    nodes = serializers.ListField(
        child=serializers.CharField(max_length=253), required=False, max_length=20_000
    )
    status = serializers.ChoiceField(choices=JobStatus.choices, required=False)
    started_at = serializers.DateTimeField(required=False, allow_null=True)
    ended_at = serializers.DateTimeField(required=False, allow_null=True)
    restart_count = serializers.IntegerField(min_value=0, max_value=2_147_483_647, required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        cluster = attrs.get("cluster") or (self.instance.cluster if self.instance else None)
        if "nodes" in attrs and cluster is not None:
            attrs["nodes"] = nodes_of_cluster(cluster=cluster, hostnames=attrs["nodes"])
        if (
            self.instance is not None
            and "cluster" in attrs
            and attrs["cluster"] != self.instance.cluster
        ):
            raise serializers.ValidationError({"cluster": ["a job cannot move to another cluster"]})
        started = attrs.get("started_at", getattr(self.instance, "started_at", None))
        ended = attrs.get("ended_at", getattr(self.instance, "ended_at", None))
        if started and ended and ended < started:
            raise serializers.ValidationError({"ended_at": ["is before started_at"]})
        return attrs


class CheckpointSerializer(serializers.ModelSerializer):
    """`POST jobs/{id}/checkpoints/` body and answer."""

    step = serializers.IntegerField(min_value=0, max_value=2**63 - 1)
    blocking_s = serializers.FloatField(min_value=0)
    size_bytes = serializers.IntegerField(
        min_value=0, max_value=2**63 - 1, required=False, allow_null=True
    )

    class Meta:
        model = Checkpoint
        fields = ["step", "saved_at", "blocking_s", "size_bytes"]

    def validate_saved_at(self, value: dt.datetime) -> dt.datetime:
        try:
            return not_future(value, timezone.now())
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from exc


class MetricPointsSerializer(serializers.Serializer):
    """`GET jobs/{id}/metrics/` answer (documented for the schema)."""

    points = serializers.ListField(child=serializers.DictField())


class MetricBatchSerializer(serializers.Serializer):
    """`POST jobs/{id}/metrics/` body (documented for the schema; parsed by jobs.intake)."""

    samples = serializers.ListField(child=serializers.DictField())


class AcceptedSerializer(serializers.Serializer):
    """`{accepted: n}`."""

    accepted = serializers.IntegerField()
