"""Training jobs, their step metrics (job-wide and per node) and checkpoints."""

from __future__ import annotations

import datetime as dt
from functools import cached_property

from django.db import models

from apps.common.limits import DURATION_S
from apps.fleet.models import Cluster, Node
from apps.jobs.choices import JobStatus
from apps.jobs.mfu import flops_per_token, mfu_factor, mfu_of


class Job(models.Model):
    """One training run. Restarted after a failure it stays the same job
    (docs/formulas.md, Incidents, failure time and interruptions)."""

    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="jobs")
    name = models.CharField(max_length=200)
    external_id = models.CharField(max_length=64, blank=True, default="")
    # Slurm's submit time: with the cluster and `external_id` what names a Slurm job, as
    # Slurm reuses ids (docs/integrations.md, 4. Slurm). Null for a job registered without one.
    submitted_at = models.DateTimeField(null=True, blank=True)
    array_job_id = models.PositiveBigIntegerField(null=True, blank=True)
    array_task_id = models.PositiveIntegerField(null=True, blank=True)
    model_name = models.CharField(max_length=200, blank=True, default="")
    n_params = models.FloatField(null=True, blank=True)
    flops_per_token = models.FloatField(null=True, blank=True)
    gpu_count = models.PositiveIntegerField()
    nodes = models.ManyToManyField(Node, related_name="jobs", blank=True)
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.PENDING)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    restart_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Denormalised from the newest job-wide sample and checkpoint, so the overview and the
    # hang check read one row per job instead of scanning metrics.
    last_metric_at = models.DateTimeField(null=True, blank=True)
    last_step = models.BigIntegerField(null=True, blank=True)
    last_step_time_s = models.FloatField(null=True, blank=True)
    last_tokens_per_s = models.FloatField(null=True, blank=True)
    last_checkpoint_at = models.DateTimeField(null=True, blank=True)
    # Progress (docs/checks.md, `job_hang`): the highest step any sample reported, job-wide or
    # per node, and when it was first reached. A job that re-reports the same step makes
    # no progress; one whose ranks report only per-node samples does.
    progress_step = models.BigIntegerField(null=True, blank=True)
    progress_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [models.Index(fields=["cluster", "status"], name="job_cluster_status")]
        constraints = [
            # One job per (cluster, id, submit time); a reused id with another submit time
            # is another job. Without a submit time, one job per (cluster, id).
            models.UniqueConstraint(
                fields=["cluster", "external_id", "submitted_at"],
                condition=~models.Q(external_id="") & models.Q(submitted_at__isnull=False),
                name="job_cluster_external_submit",
            ),
            models.UniqueConstraint(
                fields=["cluster", "external_id"],
                condition=~models.Q(external_id="") & models.Q(submitted_at__isnull=True),
                name="job_cluster_external_nosubmit",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} (#{self.pk})"

    @property
    def fpt(self) -> float | None:
        """FLOPs per token (docs/formulas.md, MFU): own value, else 6 × n_params."""
        return flops_per_token(flops_per_token=self.flops_per_token, n_params=self.n_params)

    @cached_property
    def peak_tflops(self) -> float | None:
        """Mean dense BF16 peak of its GPUs, each by its model (apps.jobs.peaks); None: a
        model's peak is unknown ("peak unknown" where MFU is shown). `attach_peaks` sets it
        for a page of jobs at once."""
        from apps.jobs.peaks import job_peaks  # peaks reads GPUs through this model's nodes

        return job_peaks(self.cluster, [self.pk])[self.pk]

    def mfu_factor(self) -> float | None:
        """Multiply a tokens/s value by this to get MFU; None when the peak is unknown."""
        peak = self.peak_tflops
        if peak is None:
            return None
        return mfu_factor(fpt=self.fpt, gpu_count=self.gpu_count, peak_tflops_per_gpu=peak)

    def mfu_now(self, *, stopped: bool = False) -> float | None:
        """MFU of the newest job-wide sample (docs/formulas.md, MFU); 0 while the job is hung or
        interrupted (a stopped job does no work, whatever its last sample said)."""
        if stopped:
            return 0.0
        factor = self.mfu_factor()
        return mfu_of(self.last_tokens_per_s, factor) if factor and self.last_tokens_per_s else None

    @property
    def status_choice(self) -> JobStatus:
        """The status as its choice member (label and colour)."""
        return JobStatus(self.status)


class JobAttempt(models.Model):
    """One attempt of a job: a requeued Slurm job runs again under the same id, each run
    with its own submit and start time (docs/integrations.md, 4. Slurm). `key` is the attempt's
    submit time in Unix seconds (its start when Slurm gave none), which `squeue` and `sacct` agree
    on."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="attempts")
    key = models.BigIntegerField()
    state = models.CharField(max_length=32, help_text="Slurm's state of the attempt")
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    hostlist = models.CharField(max_length=1000, blank=True, default="")

    class Meta:
        ordering = ["job", "key"]
        constraints = [models.UniqueConstraint(fields=["job", "key"], name="jobattempt_job_key")]

    def __str__(self) -> str:
        return f"job {self.job_id} attempt {self.key} ({self.state})"

    @property
    def submitted_at(self) -> dt.datetime:
        """The attempt's key as a time."""
        return dt.datetime.fromtimestamp(self.key, tz=dt.UTC)


class JobMetric(models.Model):
    """A job-wide step sample (no node): what MFU, throughput and loss charts use.

    Non-finite `loss`/`grad_norm` (the `sdc` check's evidence) are stored as NULL with the
    literal kept in `nonfinite`, because SQLite turns NaN into NULL on its own.

    `extreme` marks the samples with the lowest and highest tokens/s of their 5-minute
    bucket: a 30-day chart preselects those (MinMax) and runs LTTB on them, instead of
    reading half a million rows.
    """

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="metrics")
    ts = models.DateTimeField()
    step = models.BigIntegerField()
    step_time_s = models.FloatField()
    tokens_per_s = models.FloatField()
    loss = models.FloatField(null=True, blank=True)
    grad_norm = models.FloatField(null=True, blank=True)
    nonfinite = models.CharField(max_length=64, blank=True, default="")
    extreme = models.BooleanField(default=False, db_default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "ts"], name="jobmetric_job_ts")]
        indexes = [
            models.Index(
                fields=["job", "ts"], condition=models.Q(extreme=True), name="jobmetric_extreme"
            )
        ]

    def __str__(self) -> str:
        return f"job {self.job_id} step {self.step} @ {self.ts:%Y-%m-%d %H:%M:%S}"


class JobMetricHour(models.Model):
    """A job's job-wide samples summed over one UTC hour: the sums the step-time-weighted
    mean MFU is made of (mean tokens/s = tps_step_sum / step_s_sum), so weekly reports and
    cluster MFU charts read hours, not samples. Recomputed from JobMetric for every hour a
    batch touches, so a re-posted batch changes nothing."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="hours")
    hour = models.DateTimeField()
    n = models.PositiveIntegerField()
    step_s_sum = models.FloatField(help_text="Σ step_time_s")
    tps_step_sum = models.FloatField(help_text="Σ tokens_per_s × step_time_s")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "hour"], name="jobhour_job_hour")]
        indexes = [models.Index(fields=["hour"], name="jobhour_hour")]

    def __str__(self) -> str:
        return f"job {self.job_id} @ {self.hour:%Y-%m-%d %H:00}"


class NodeStepMetric(models.Model):
    """One node's timing for a step: `compute_s` before it waits on a collective."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="node_metrics")
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="step_metrics")
    ts = models.DateTimeField()
    step = models.BigIntegerField()
    step_time_s = models.FloatField()
    compute_s = models.FloatField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["job", "node", "ts"], name="nodestep_job_node_ts")
        ]

    def __str__(self) -> str:
        return f"job {self.job_id} node {self.node_id} step {self.step}"


class Checkpoint(models.Model):
    """A checkpoint save: began at `saved_at`, paused training for `blocking_s`."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="checkpoints")
    step = models.BigIntegerField()
    saved_at = models.DateTimeField()
    blocking_s = models.FloatField()
    size_bytes = models.BigIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["saved_at"]
        constraints = [
            models.UniqueConstraint(fields=["job", "saved_at"], name="checkpoint_job_saved_at")
        ]

    def __str__(self) -> str:
        return f"job {self.job_id} step {self.step} @ {self.saved_at:%Y-%m-%d %H:%M}"


def known_blocking(seconds: float) -> float:
    """A stored `blocking_s` as every derived figure reads it: one outside [0, 30 days]
    (stored before the bound on durations, docs/api.md, Conventions) or not finite is unknown, and
    counts as no pause, so that no sum, mean or `saved_at + blocking_s` overflows."""
    return seconds if 0 <= seconds <= DURATION_S else 0.0


def known_blocking_sql() -> models.Case:
    """`known_blocking` in SQL, for aggregates over checkpoints."""
    return models.Case(
        models.When(blocking_s__gte=0, blocking_s__lte=DURATION_S, then=models.F("blocking_s")),
        default=models.Value(0.0),
        output_field=models.FloatField(),
    )


class RankStack(models.Model):
    """A Python stack some rank was seen stalled in, stored once: 10,000 ranks waiting in one
    collective share one row. `digest` is the sha256 of the frames' canonical JSON; `frame`
    the innermost training-code frame as "function (file:line)", `collective` the
    torch.distributed function on the stack ("all_reduce", "barrier", "wait"; "" for none),
    both derived once when the stack is first stored (apps/jobs/stacks.py)."""

    digest = models.CharField(max_length=64, unique=True)
    frames = models.JSONField(help_text="[{file, function, line}], innermost last")
    frame = models.CharField(max_length=1300, blank=True, default="")
    collective = models.CharField(max_length=64, blank=True, default="")

    def __str__(self) -> str:
        return self.frame or self.digest[:12]


class Rank(models.Model):
    """One rank of one attempt of a job, and what its newest stall report said (there is no
    per-report history). The server numbers attempts: a restarted job's ranks register
    afresh into attempt current+1 (apps/jobs/ranks.py). A rank registered by its first stall
    report has no `started_at` or `pid`."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="ranks")
    attempt = models.PositiveIntegerField()
    rank = models.PositiveIntegerField()
    world_size = models.PositiveIntegerField()
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="ranks")
    local_rank = models.PositiveIntegerField(null=True, blank=True)
    pid = models.PositiveIntegerField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True, help_text="the process's start")
    registered_at = models.DateTimeField()
    # The newest report: its ts, and what it said. The current stall's first report and
    # start (ts − stalled_s) are kept while it stays stalled; a `resumed` report sets
    # `resumed_at`, which the next stall clears.
    report_at = models.DateTimeField(null=True, blank=True)
    first_report_at = models.DateTimeField(null=True, blank=True)
    stalled_since = models.DateTimeField(null=True, blank=True)
    last_step = models.BigIntegerField(null=True, blank=True)
    stalled_s = models.FloatField(null=True, blank=True)
    in_collective = models.BooleanField(null=True, blank=True)
    stack = models.ForeignKey(
        RankStack, on_delete=models.PROTECT, null=True, blank=True, related_name="ranks"
    )
    resumed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            # Also the index every read goes through: one job's highest attempt, its ranks.
            models.UniqueConstraint(fields=["job", "attempt", "rank"], name="rank_job_attempt")
        ]

    def __str__(self) -> str:
        return f"job {self.job_id} attempt {self.attempt} rank {self.rank}"

    @property
    def stalled(self) -> bool:
        """Its newest report is a stall (not a `resumed` one)."""
        return self.report_at is not None and self.resumed_at is None


class JobPhase(models.Model):
    """Time a run spent not training (docs/agent.md, Phases): `startup`, `checkpoint_restore`,
    `eval`, `data_wait` or any other name, from `start` to `end`. A phase is identified by
    (job, name, start): sent again, it updates `end` and `step`."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="phases")
    name = models.CharField(max_length=64)
    start = models.DateTimeField()
    end = models.DateTimeField()
    node = models.ForeignKey(
        Node, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    step = models.BigIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["start"]
        constraints = [
            models.UniqueConstraint(fields=["job", "name", "start"], name="jobphase_job_name_start")
        ]
        indexes = [models.Index(fields=["start"], name="jobphase_start")]

    def __str__(self) -> str:
        return f"job {self.job_id} {self.name} @ {self.start:%Y-%m-%d %H:%M}"

    @property
    def duration_s(self) -> float:
        return max(0.0, (self.end - self.start).total_seconds())
