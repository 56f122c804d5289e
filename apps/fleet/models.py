"""Clusters, nodes, GPUs, each node's state history, and where agent tokens may write."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models

from apps.common.hostnames import Hostlists
from apps.fleet.choices import ActuationMode, NodeState, SchedulerKind
from apps.fleet.gpu_models import canonical_model
from apps.fleet.vendors import link_word, peak_for, vendor_of


class Cluster(models.Model):
    """A training cluster; `name` is its slug and API lookup key."""

    name = models.SlugField(max_length=64, unique=True)
    gpu_model = models.CharField("GPU model", max_length=64)
    peak_tflops_per_gpu = models.FloatField(
        "peak TFLOP/s per GPU", help_text="dense BF16 peak, TFLOP/s"
    )
    # A cluster of several GPU models (docs/formulas.md, MFU): model → dense BF16 TFLOP/s,
    # over the shipped table (apps/fleet/data/gpu_peaks.csv); `peak_tflops_per_gpu` stays
    # the peak of `gpu_model` when this map does not name it.
    peak_tflops_by_model = models.JSONField(
        "peak TFLOP/s by model",
        default=dict,
        blank=True,
        help_text='model → dense BF16 TFLOP/s, e.g. {"MI300X": 1307.4}; '
        "over the shipped table, for GPUs of other models than gpu_model",
    )
    gpus_per_node = models.PositiveSmallIntegerField("GPUs per node", default=8)
    simulated = models.BooleanField(default=False, help_text="written by `simulate`")
    created_at = models.DateTimeField(auto_now_add=True)
    # The scheduler that places jobs on it (docs/slurm.md): how to reach it, and whether
    # KUAE's drains and returns are sent to it. Secrets come from the environment.
    slurm_kind = models.CharField(
        max_length=8, choices=SchedulerKind.choices, blank=True, default=""
    )
    slurm_url = models.CharField(
        "Slurm URL",
        max_length=500,
        blank=True,
        default="",
        help_text="slurmrestd: http(s)://… or unix:/path",
    )
    actuation = models.CharField(
        max_length=8, choices=ActuationMode.choices, default=ActuationMode.OFF
    )
    # Paused automation (docs/on-call.md): checks still run and open incidents, but change no
    # node state and nothing is sent to the scheduler. Who, when and why are shown on
    # every page while it lasts.
    automation_paused = models.BooleanField("automation paused", default=False)
    automation_reason = models.CharField(
        "why automation is paused", max_length=300, blank=True, default=""
    )
    automation_by = models.CharField("automation paused by", max_length=150, blank=True, default="")
    automation_at = models.DateTimeField("automation paused at", null=True, blank=True)
    # The Prometheus-API server that already scrapes the cluster's dcgm-exporters
    # (docs/integrations.md, 2d. Prometheus): the GPU checks read their values from it.
    # Its bearer token is set here in the admin only (never through the API), else
    # KUAE_PROMETHEUS_TOKEN applies.
    prometheus_url = models.CharField(
        "Prometheus URL",
        max_length=500,
        blank=True,
        default="",
        help_text="http(s)://host:port of its HTTP API",
    )
    prometheus_token = models.CharField(
        "Prometheus token",
        max_length=500,
        blank=True,
        default="",
        help_text="bearer token for it; empty: KUAE_PROMETHEUS_TOKEN",
    )

    # The Celery queue its checks and scheduler syncs go to: a big cluster gets workers of
    # its own (`celery worker -Q <queue>`) and can never starve another cluster's checks.
    # Empty: the shared default queue.
    queue = models.CharField(
        max_length=64,
        blank=True,
        default="",
        validators=[
            RegexValidator(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$", "letters, digits, _ . : - only")
        ],
        help_text="Celery queue for its checks and Slurm syncs; empty: the shared queue",
    )

    # The mount points every node must have, writable and healthy; admins set them
    # (`PATCH clusters/{name}/` or the admin). See docs/checks.md, `storage`.
    required_mounts = models.JSONField(
        "required mounts",
        default=list,
        blank=True,
        help_text='mount points every node must have, e.g. ["/checkpoints", "/scratch"]',
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def save(self, *args: Any, **kwargs: Any) -> None:
        # Its default model under the model's one name (apps.fleet.gpu_models): the GPUs
        # that take it are one population with those an exporter names ("H100" is
        # "NVIDIA H100 80GB HBM3").
        self.gpu_model = canonical_model(self.gpu_model)
        super().save(*args, **kwargs)

    def slurm_told(self) -> str:
        """Whether a drain set in KUAE now reaches the cluster's Slurm
        (docs/slurm.md, Actuation: drains and returns reach Slurm): `on` (Slurm is asked to
        drain the node), `paused` (automation is paused: nothing is sent), `dry_run`
        (recorded, not sent) or `off` (Slurm is not told). The
        drain page and the maintenance booking both say it from here."""
        if self.actuation == ActuationMode.OFF:
            return "off"
        if self.automation_paused:
            return "paused"
        return "on" if self.actuation == ActuationMode.ON else "dry_run"

    def model_of(self, model: str) -> str:
        """A GPU's model as the checks and pages compare it: its one name (docs/pages.md, One
        name per model), a blank one (never reported) the cluster's `gpu_model`
        (docs/pages.md, Vendors and models)."""
        return canonical_model(model or self.gpu_model)

    def peak_for(self, model: str) -> float | None:
        """The dense BF16 peak of one of its GPU models (docs/formulas.md, MFU); None: unknown."""
        return peak_for(
            model,
            gpu_model=self.gpu_model,
            peak_tflops_per_gpu=self.peak_tflops_per_gpu,
            by_model=self.peak_tflops_by_model or {},
        )

    def task_options(self) -> dict[str, str]:
        """`apply_async` options for work done for this cluster: its own queue when it has
        one, else nothing (the task's route or the shared default queue)."""
        return {"queue": self.queue} if self.queue else {}


class Node(models.Model):
    """A GPU server. `state` mirrors the newest entry of its state history."""

    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="nodes")
    hostname = models.CharField(max_length=253, unique=True)
    rack = models.CharField(max_length=64, blank=True, default="")
    # Topology (docs/checks.md, Blast radius): the leaf switch, PDU and NVLink domain it
    # hangs off. Nodes that fail together behind one of them are one incident for it, not
    # one each.
    switch = models.CharField(max_length=64, blank=True, default="")
    pdu = models.CharField(max_length=64, blank=True, default="")
    nvlink_domain = models.CharField(max_length=64, blank=True, default="")
    gpu_count = models.PositiveSmallIntegerField()
    exporter_url = models.CharField(max_length=500, blank=True, default="")
    # Other names it is known by (IPs, FQDNs) in canonical form (apps.fleet.addresses), so
    # an alert naming `10.0.3.17:9100` or `gpu-a017.dc1.example.com` finds it.
    addresses = models.JSONField(default=list, blank=True)
    in_service_at = models.DateTimeField()
    state = models.CharField(max_length=16, choices=NodeState.choices, default=NodeState.HEALTHY)
    state_reason = models.TextField(blank=True, default="")
    state_changed_at = models.DateTimeField()
    last_seen_at = models.DateTimeField(null=True, blank=True)
    last_heartbeat_at = models.DateTimeField(null=True, blank=True)
    # Pull mode: the outcome of the last scrape of `exporter_url` (like Prometheus' `up`).
    scraped_at = models.DateTimeField(null=True, blank=True)
    scrape_ok = models.BooleanField(null=True, blank=True)
    scrape_error = models.CharField(max_length=300, blank=True, default="")
    scrape_ms = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["hostname"]
        indexes = [
            models.Index(fields=["cluster", "state"], name="node_cluster_state"),
            models.Index(fields=["cluster", "rack", "hostname"], name="node_cluster_rack"),
        ]

    def __str__(self) -> str:
        return self.hostname

    @property
    def state_choice(self) -> NodeState:
        """The state as its choice member (label and colour)."""
        return NodeState(self.state)


class NodeStateChange(models.Model):
    """One entry of a node's state history; may be back-filled (`at` in the past)."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="state_changes")
    state = models.CharField(max_length=16, choices=NodeState.choices)
    reason = models.TextField(blank=True, default="")
    at = models.DateTimeField()
    source = models.CharField(max_length=16, default="user")
    by = models.CharField(max_length=150, blank=True, default="")
    recorded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["node", "at"], name="statechange_node_at")]

    def __str__(self) -> str:
        return f"{self.node_id} {self.state} @ {self.at:%Y-%m-%d %H:%M}"


class GPU(models.Model):
    """One GPU of a node, with its latest telemetry values."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="gpus")
    index = models.PositiveSmallIntegerField()
    uuid = models.CharField(max_length=64, blank=True, default="")
    # docs/pages.md, Vendors and models: `nvidia`, `amd`, `intel`, `mthreads` ('' not yet
    # reported: `vendor_of` reads it from the model); a blank model is the cluster's.
    vendor = models.CharField(max_length=16, blank=True, default="", db_default="")
    model = models.CharField(max_length=64, blank=True, default="")
    # The exporter whose series report it (its mapping file: dcgm, amd, gaudi; '' for posted
    # JSON): which fields it can never report (docs/integrations.md, Exporters and their
    # mapping files).
    source = models.CharField(max_length=16, blank=True, default="", db_default="")
    # PCI address in one spelling (apps.telemetry.pcibus), from telemetry's `pci_bus_id`: how a
    # kernel-log XID, which names the bus and not the index, finds its GPU.
    pci_bus = models.CharField(max_length=16, blank=True, default="", db_default="")
    metrics = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(null=True, blank=True, help_text="newest sample's ts")
    # The values before the newest sample, so checks can see ECC growth and new XIDs.
    prev_metrics = models.JSONField(default=dict, blank=True)
    prev_at = models.DateTimeField(null=True, blank=True)
    # When the GEMM probe last reported (its figures live in `metrics` with the rest).
    probe_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["node", "index"]
        constraints = [models.UniqueConstraint(fields=["node", "index"], name="gpu_node_index")]
        verbose_name = "GPU"
        verbose_name_plural = "GPUs"

    def __str__(self) -> str:
        return f"{self.node_id}/{self.index}"

    @property
    def vendor_known(self) -> str:
        """Its vendor, reported or read from its model's name ('' when neither says)."""
        return vendor_of(self.vendor, self.model)

    @property
    def link_word(self) -> str:
        """Its vendor's word for its GPU-to-GPU links (docs/pages.md)."""
        return link_word(self.vendor_known)


MAX_SCOPE_NODES = 20_000  # docs/operations.md bounds: hostlist expansion, 20,000 names


def scope_hostnames(expression: str) -> list[str]:
    """The hostnames a scope's hostlist (`gpu[001-004],gpu010`) names, expanded once (at most
    MAX_SCOPE_NODES, counted before expanding), each a DNS name; ValueError naming the
    problem otherwise."""
    names = Hostlists(MAX_SCOPE_NODES).hostnames(expression.strip())
    if expression.strip() and not names:
        raise ValueError("names no node")
    return names


class AgentScope(models.Model):
    """Where an agent account may write (docs/operations.md#agent-tokens-and-scopes): only its
    cluster and, when `hostlist` is set, only those nodes of it (and the jobs that run on
    them). An agent without a scope is a whole-fleet relay. Checked by apps.fleet.scope and
    apps.jobs.scope.

    The fleet's, not accounts': it names clusters and nodes, and accounts imports no app
    above common. Moved here from accounts by the accounts.0004/fleet.0014 migrations, rows
    and ids kept."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="agent_scope"
    )
    # PROTECT: deleting the cluster must never widen its agents to the whole fleet.
    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="+")
    hostlist = models.CharField(
        max_length=2000,
        blank=True,
        default="",
        help_text="the nodes it writes for, e.g. gpu[001-004]; blank: the whole cluster",
    )
    hostnames = models.JSONField(default=list, blank=True, editable=False)

    class Meta:
        verbose_name = "agent scope"

    def __str__(self) -> str:
        return describe_scope(self)

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Save, with `hostnames` expanded from `hostlist` (never out of step with it)."""
        self.hostnames = scope_hostnames(self.hostlist)
        super().save(*args, **kwargs)

    def clean(self) -> None:
        """A hostlist that names no node, too many or a non-hostname: a form error on it."""
        try:
            self.hostnames = scope_hostnames(self.hostlist)
        except ValueError as exc:
            raise ValidationError({"hostlist": str(exc)}) from exc


def describe_scope(scope: AgentScope | None) -> str:
    """`whole fleet`, `cluster c1` or `cluster c1, nodes gpu[001-004]`."""
    if scope is None:
        return "whole fleet"
    nodes = f", nodes {scope.hostlist}" if scope.hostlist else ""
    return f"cluster {scope.cluster.name}{nodes}"
