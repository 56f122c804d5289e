"""API shapes for jobs and checkpoints (docs/api.md, Jobs)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.common.fields import NodeNameField
from apps.common.limits import DURATION_S, FLOPS_PER_TOKEN, GPU_COUNT, N_PARAMS
from apps.common.timeutil import not_future
from apps.fleet.fields import ClusterNameField
from apps.fleet.models import Node
from apps.fleet.serializers import IncidentRefSerializer
from apps.fleet.validators import nodes_of_cluster
from apps.jobs.choices import JobCondition, JobStatus
from apps.jobs.models import Checkpoint, Job, JobPhase
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
    n_params = serializers.FloatField(
        min_value=0, max_value=N_PARAMS, required=False, allow_null=True
    )
    flops_per_token = serializers.FloatField(
        min_value=0, max_value=FLOPS_PER_TOKEN, required=False, allow_null=True
    )
    gpu_count = serializers.IntegerField(min_value=1, max_value=GPU_COUNT)
    nodes = serializers.ListField(child=NodeNameField(), required=False, max_length=20_000)
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
    blocking_s = serializers.FloatField(min_value=0, max_value=DURATION_S)
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


class PhaseSerializer(serializers.ModelSerializer):
    """A phase of `GET jobs/{id}/phases/`: time the run spent not training."""

    node: serializers.SlugRelatedField[Node] = serializers.SlugRelatedField(
        slug_field="hostname", read_only=True, allow_null=True
    )
    duration_s = serializers.FloatField(read_only=True)

    class Meta:
        model = JobPhase
        fields = ["name", "start", "end", "duration_s", "node", "step"]


class PhaseItemSerializer(serializers.Serializer):
    """One phase as posted (documentation only: parsed by jobs.phase_intake)."""

    name = serializers.CharField(
        max_length=64, help_text="a short slug: startup, checkpoint_restore, eval, data_wait …"
    )
    start = serializers.DateTimeField(help_text="not more than 5 minutes in the future")
    end = serializers.DateTimeField(help_text="≥ start, at most 30 days after it")
    node = serializers.CharField(
        max_length=253, required=False, help_text="a node of the job's cluster"
    )
    step = serializers.IntegerField(min_value=0, required=False)


class PhaseBatchSerializer(serializers.Serializer):
    """`POST jobs/{id}/phases/` body: `{phases: [...]}`, 1 to 10,000 (documentation only)."""

    phases = PhaseItemSerializer(many=True)


class MetricPointsSerializer(serializers.Serializer):
    """`GET jobs/{id}/metrics/` answer (documented for the schema)."""

    points = serializers.ListField(child=serializers.DictField())


class MetricBatchSerializer(serializers.Serializer):
    """`POST jobs/{id}/metrics/` body (documented for the schema; parsed by jobs.intake)."""

    samples = serializers.ListField(child=serializers.DictField())


class AcceptedSerializer(serializers.Serializer):
    """`{accepted: n}`."""

    accepted = serializers.IntegerField()


# --- Ranks and stall reports (documentation only: parsed by jobs.rank_intake) -------------


class RankItemSerializer(serializers.Serializer):
    """One rank's process as it started."""

    rank = serializers.IntegerField(min_value=0, max_value=999_999, help_text="< world_size")
    world_size = serializers.IntegerField(
        min_value=1, max_value=1_000_000, help_text="at most the job's gpu_count"
    )
    node = serializers.CharField(
        max_length=253, help_text="a node of the job's cluster; joins the job's nodes"
    )
    local_rank = serializers.IntegerField(min_value=0, required=False)
    pid = serializers.IntegerField(min_value=0, required=False)
    started_at = serializers.DateTimeField(help_text="when the rank's process started")


class RankBatchSerializer(serializers.Serializer):
    """`{ranks: [{rank, world_size, node, local_rank?, pid?, started_at}]}` (1 to 10,000
    ranks)."""

    ranks = serializers.ListField(child=RankItemSerializer(), max_length=10_000)


class RankRegisteredSerializer(serializers.Serializer):
    """`{accepted, attempt}`: the attempt the ranks are in (a restarted rank begins the
    next one)."""

    accepted = serializers.IntegerField()
    attempt = serializers.IntegerField()


class StackFrameSerializer(serializers.Serializer):
    """One frame of a Python stack."""

    file = serializers.CharField(max_length=1_000)
    function = serializers.CharField(max_length=200)
    line = serializers.IntegerField(min_value=0)


class StallReportSerializer(serializers.Serializer):
    """One stall report."""

    job = serializers.IntegerField(min_value=1)
    node = serializers.CharField(max_length=253)
    ts = serializers.DateTimeField(help_text="when the report was made")
    rank = serializers.IntegerField(min_value=0, max_value=999_999)
    last_step = serializers.IntegerField(
        min_value=0, allow_null=True, help_text="null: unknown (a py-spy dump)"
    )
    stalled_s = serializers.FloatField(
        min_value=0,
        max_value=DURATION_S,
        allow_null=True,
        help_text="seconds since the rank's last step (null: unknown); with `resumed`, how "
        "long it was stalled",
    )
    stack = StackFrameSerializer(
        many=True, help_text="innermost last; past 64 frames the innermost 64 are kept"
    )
    in_collective = serializers.BooleanField(
        allow_null=True, help_text="null: whether the stack holds a torch.distributed collective"
    )
    resumed = serializers.BooleanField(required=False, default=False, help_text="steps came again")
    world_size = serializers.IntegerField(
        min_value=1, max_value=1_000_000, required=False, help_text="at most the job's gpu_count"
    )


class StallBatchSerializer(serializers.Serializer):
    """`{reports: [...]}` (1 to 10,000), or one report as the body."""

    reports = serializers.ListField(child=StallReportSerializer(), max_length=10_000)


class RankReportSerializer(serializers.Serializer):
    """A rank's newest stall report."""

    ts = serializers.DateTimeField()
    last_step = serializers.IntegerField(allow_null=True)
    stalled_s = serializers.FloatField(allow_null=True)
    stalled_since = serializers.DateTimeField(
        allow_null=True, help_text="the current stall's start: ts − stalled_s of its first report"
    )
    first_report_at = serializers.DateTimeField(
        allow_null=True, help_text="the current stall's first report"
    )
    in_collective = serializers.BooleanField(allow_null=True)
    resumed_at = serializers.DateTimeField(
        allow_null=True, help_text="set: the newest report says steps came again"
    )
    frame = serializers.CharField(help_text="innermost training-code frame: function (file:line)")
    stack = serializers.CharField(allow_null=True, help_text="a key of `stacks`")


VERDICT_CHOICES = ["silent", "outside", "behind", "waiting", "running"]


class RankStateSerializer(serializers.Serializer):
    """One rank of the attempt and what the verdict says of it."""

    rank = serializers.IntegerField()
    node = serializers.CharField()
    local_rank = serializers.IntegerField(allow_null=True)
    pid = serializers.IntegerField(allow_null=True)
    started_at = serializers.DateTimeField(allow_null=True)
    verdict = serializers.ChoiceField(choices=VERDICT_CHOICES)
    report = RankReportSerializer(allow_null=True)


class VerdictSerializer(serializers.Serializer):
    """Which ranks hang the job. `culprits` (ascending) and their nodes are empty unless
    `minority`; `frame`, `collective` and `step` are what most stalled ranks share; `due`:
    active stall reports come from at least half the ranks."""

    minority = serializers.BooleanField(
        help_text="the marked ranks (silent, outside, behind) are 1 to max(1, 10%) of all"
    )
    culprits = serializers.ListField(child=serializers.IntegerField(), help_text="rank numbers")
    culprit_nodes = serializers.ListField(child=serializers.CharField(), help_text="hostnames")
    frame = serializers.CharField(help_text="the frame most stalled ranks are in")
    collective = serializers.CharField(help_text='the collective they wait in ("": none)')
    step = serializers.IntegerField(allow_null=True, help_text="the step most of them reached")
    counts = serializers.DictField(child=serializers.IntegerField(), help_text="by verdict")
    stalled = serializers.IntegerField(help_text="ranks whose newest report is an active stall")
    due = serializers.BooleanField()
    stalled_since = serializers.DateTimeField(
        allow_null=True, help_text="the earliest start of an active stall"
    )
    first_report_at = serializers.DateTimeField(
        allow_null=True, help_text="the earliest first report of an active stall"
    )
    sentence = serializers.CharField(help_text="the verdict in one plain sentence")


class JobRanksSerializer(serializers.Serializer):
    """`GET jobs/{id}/ranks/` answer: one attempt's ranks, the verdict on them, and the
    stacks they are in, each once by digest."""

    job = serializers.IntegerField()
    attempt = serializers.IntegerField(allow_null=True)
    world_size = serializers.IntegerField(allow_null=True)
    registered = serializers.IntegerField()
    stall_s = serializers.FloatField(
        help_text="max(60, 5 × the median of the job's last 50 step times)"
    )
    verdict = VerdictSerializer()
    stacks = serializers.DictField(child=StackFrameSerializer(many=True))
    ranks = RankStateSerializer(many=True)
