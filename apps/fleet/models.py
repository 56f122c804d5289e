"""Clusters, nodes, GPUs and each node's state history."""

from __future__ import annotations

from django.db import models

from apps.fleet.choices import NodeState


class Cluster(models.Model):
    """A training cluster; `name` is its slug and API lookup key."""

    name = models.SlugField(max_length=64, unique=True)
    gpu_model = models.CharField(max_length=64)
    peak_tflops_per_gpu = models.FloatField(help_text="dense BF16 peak, TFLOP/s")
    gpus_per_node = models.PositiveSmallIntegerField(default=8)
    simulated = models.BooleanField(default=False, help_text="written by `simulate`")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Node(models.Model):
    """A GPU server. `state` mirrors the newest entry of its state history."""

    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="nodes")
    hostname = models.CharField(max_length=253, unique=True)
    rack = models.CharField(max_length=64, blank=True, default="")
    gpu_count = models.PositiveSmallIntegerField()
    exporter_url = models.CharField(max_length=500, blank=True, default="")
    in_service_at = models.DateTimeField()
    state = models.CharField(max_length=16, choices=NodeState.choices, default=NodeState.HEALTHY)
    state_reason = models.TextField(blank=True, default="")
    state_changed_at = models.DateTimeField()
    last_seen_at = models.DateTimeField(null=True, blank=True)
    last_heartbeat_at = models.DateTimeField(null=True, blank=True)

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
    model = models.CharField(max_length=64, blank=True, default="")
    metrics = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["node", "index"]
        constraints = [models.UniqueConstraint(fields=["node", "index"], name="gpu_node_index")]

    def __str__(self) -> str:
        return f"{self.node_id}/{self.index}"
