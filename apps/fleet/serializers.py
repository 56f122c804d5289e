"""API shapes for clusters and nodes (CONTRACT §2)."""

from __future__ import annotations

import datetime as dt
from urllib.parse import urlsplit

from django.conf import settings
from django.utils import timezone
from rest_framework import serializers

from apps.common.fields import ClusterNameField, HostnameField
from apps.common.timeutil import not_future
from apps.fleet.addresses import MAX_ADDRESSES, addresses_clean
from apps.fleet.choices import NodeState
from apps.fleet.destinations import url_refusal
from apps.fleet.models import GPU, Cluster, Node


def validate_exporter_url(value: str) -> None:
    """http(s)://host[:port]/path — cluster-internal hosts have no dots, so no TLD is needed —
    whose host is not, and does not resolve to, an address the scraper refuses
    (KUAE_SCRAPE_ALLOW; checked again at every scrape)."""
    if not value:
        return
    parts = urlsplit(value)
    try:
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError as exc:
        raise serializers.ValidationError("has a bad port") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise serializers.ValidationError("must be an http(s) URL with a host")
    refused = url_refusal(value, settings.KUAE_SCRAPE_ALLOW)
    if refused:
        raise serializers.ValidationError(f"the scraper may not connect there: {refused}")


class IncidentRefSerializer(serializers.Serializer):
    """An open incident as a node's or a job's answer lists it (CONTRACT §6)."""

    id = serializers.IntegerField()
    category = serializers.CharField()
    severity = serializers.CharField()
    title = serializers.CharField()


class GpuStatesSerializer(serializers.Serializer):
    """GPUs of the cluster's nodes in each state."""

    healthy = serializers.IntegerField()
    suspect = serializers.IntegerField()
    drained = serializers.IntegerField()
    down = serializers.IntegerField()
    maintenance = serializers.IntegerField()


class GpuAccountSerializer(serializers.Serializer):
    """`allocated + idle + unavailable = total` (CONTRACT §6)."""

    total = serializers.IntegerField()
    allocated = serializers.IntegerField(help_text="on healthy or suspect nodes running a job")
    idle = serializers.IntegerField(help_text="on healthy or suspect nodes running no job")
    unavailable = serializers.IntegerField(help_text="on drained, down or maintenance nodes")
    by_state = GpuStatesSerializer()


class ClusterSerializer(serializers.ModelSerializer):
    """A cluster with its node and GPU counts."""

    node_count = serializers.IntegerField(read_only=True)
    gpu_count = serializers.IntegerField(read_only=True)
    peak_tflops_per_gpu = serializers.FloatField(min_value=0.001)
    gpus_per_node = serializers.IntegerField(min_value=1, max_value=64)

    class Meta:
        model = Cluster
        fields = [
            "name",
            "gpu_model",
            "peak_tflops_per_gpu",
            "gpus_per_node",
            "node_count",
            "gpu_count",
            "created_at",
        ]
        read_only_fields = ["created_at"]


class ClusterDetailSerializer(ClusterSerializer):
    """A cluster with its GPU accounting (`gpus`, set by the view)."""

    gpus = GpuAccountSerializer(read_only=True, source="gpu_account")

    class Meta(ClusterSerializer.Meta):
        fields = [*ClusterSerializer.Meta.fields, "gpus"]


class NodeSerializer(serializers.ModelSerializer):
    """A node as lists show it."""

    cluster = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Node
        fields = [
            "hostname",
            "cluster",
            "rack",
            "gpu_count",
            "exporter_url",
            "addresses",
            "in_service_at",
            "state",
            "state_reason",
            "state_changed_at",
            "last_seen_at",
            "last_heartbeat_at",
        ]
        read_only_fields = fields


class GPUSerializer(serializers.ModelSerializer):
    """A GPU with its latest telemetry values."""

    class Meta:
        model = GPU
        fields = ["index", "uuid", "model", "metrics", "updated_at"]
        read_only_fields = fields


class NodeDetailSerializer(NodeSerializer):
    """A node with its GPUs' latest values and the open incidents naming it (set by the
    view)."""

    gpus = GPUSerializer(many=True, read_only=True)
    open_incidents = IncidentRefSerializer(many=True, read_only=True)

    class Meta(NodeSerializer.Meta):
        fields = [*NodeSerializer.Meta.fields, "gpus", "open_incidents"]
        read_only_fields = fields


class NodeCreateSerializer(serializers.Serializer):
    """`POST nodes/` body."""

    hostname = HostnameField()
    cluster = ClusterNameField()
    rack = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")
    gpu_count = serializers.IntegerField(min_value=0, max_value=64, required=False)
    exporter_url = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=500,
        validators=[validate_exporter_url],
        help_text="http(s) URL of the node's dcgm-exporter, for pull mode; not an address "
        "the scraper refuses (loopback, link-local, outside KUAE_SCRAPE_ALLOW when set)",
    )
    in_service_at = serializers.DateTimeField(required=False)
    addresses = serializers.ListField(
        child=serializers.CharField(max_length=253),
        required=False,
        max_length=MAX_ADDRESSES,
        help_text="other names the node is known by: IP addresses or DNS names (FQDNs)",
    )

    def validate_addresses(self, value: list[str]) -> tuple[str, ...]:
        """Each an IP address or a DNS name, stored in canonical form."""
        try:
            return tuple(addresses_clean(value))
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from exc


class NodeStateSerializer(serializers.Serializer):
    """`POST nodes/{hostname}/state/` body."""

    state = serializers.ChoiceField(choices=NodeState.choices)
    reason = serializers.CharField(max_length=2000)
    at = serializers.DateTimeField(required=False)


class HeartbeatSerializer(serializers.Serializer):
    """`POST nodes/{hostname}/heartbeat/` body; `ts` is informational (not more than 5
    minutes in the future)."""

    ts = serializers.DateTimeField(required=False)

    def validate_ts(self, value: dt.datetime) -> dt.datetime:
        try:
            return not_future(value, timezone.now())
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from exc
