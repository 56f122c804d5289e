"""API shapes for clusters and nodes (docs/api.md, Clusters; Nodes)."""

from __future__ import annotations

import datetime as dt
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.common.fields import HostnameField, NodeNameField
from apps.common.timeutil import not_future
from apps.fleet.addresses import MAX_ADDRESSES, addresses_clean
from apps.fleet.choices import ActuationMode, NodeState, SchedulerKind
from apps.fleet.destinations import slurmrestd_url_refusal, url_refusal
from apps.fleet.fields import ClusterNameField
from apps.fleet.models import GPU, Cluster, Node
from apps.fleet.mounts import MAX_LENGTH, MAX_MOUNTS, mounts_clean
from apps.fleet.vendors import peaks_error


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
    refused = url_refusal(value, settings.KUAE_SCRAPE_ALLOW)  # the one rule (destinations)
    if refused:
        raise serializers.ValidationError(f"the scraper may not connect there: {refused}")


def validate_prometheus_url(value: str) -> None:
    """A cluster's Prometheus (docs/integrations.md, 2d. Prometheus): an http(s) URL under the same
    destination policy as exporters (KUAE_SCRAPE_ALLOW) — one on loopback is refused unless
    listed."""
    validate_exporter_url(value)


class IncidentRefSerializer(serializers.Serializer):
    """An open incident as a node's or a job's answer lists it (docs/incidents.md, A job's
    condition)."""

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
    """`allocated + idle + unavailable = total` (docs/formulas.md, GPUs now)."""

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
    peak_tflops_by_model = serializers.JSONField(
        required=False,
        help_text="model → dense BF16 TFLOP/s for GPU models other than gpu_model (or to "
        'override the shipped table, docs/formulas.md, MFU), e.g. {"MI300X": 1307.4}',
    )
    gpus_per_node = serializers.IntegerField(min_value=1, max_value=64)

    class Meta:
        model = Cluster
        fields = [
            "name",
            "gpu_model",
            "peak_tflops_per_gpu",
            "peak_tflops_by_model",
            "gpus_per_node",
            "node_count",
            "gpu_count",
            "created_at",
        ]
        read_only_fields = ["created_at"]

    def validate_peak_tflops_by_model(self, value: object) -> dict[str, float]:
        """An object of model name → positive TFLOP/s (apps.fleet.vendors.peaks_error)."""
        problem = peaks_error(value)
        if problem:
            raise serializers.ValidationError(problem)
        assert isinstance(value, dict)  # peaks_error's promise
        return {name.strip(): float(peak) for name, peak in value.items()}


class SlurmLinkSerializer(serializers.Serializer):
    """How KUAE reaches the cluster's Slurm (docs/slurm.md): `cli` (client commands on the
    worker; `url` optional, the path of its slurm.conf) or `rest` (slurmrestd at `url`:
    http(s)://… or unix:/path). The JWT comes from KUAE_SLURM_JWT(_FILE), never this body."""

    mode = serializers.ChoiceField(choices=SchedulerKind.choices)
    url = serializers.CharField(required=False, allow_blank=True, max_length=500, default="")

    def to_internal_value(self, data: object) -> dict[str, str]:
        if isinstance(data, dict):
            secrets = sorted(set(data) & {"token", "jwt", "password", "secret"})
            if secrets:
                raise serializers.ValidationError(
                    {secrets[0]: ["secrets come from KUAE_SLURM_JWT or KUAE_SLURM_JWT_FILE"]}
                )
        return super().to_internal_value(data)

    def validate(self, attrs: dict[str, str]) -> dict[str, str]:
        url = attrs.get("url", "")
        if attrs["mode"] == SchedulerKind.REST:
            if not url.startswith(("http://", "https://", "unix:/")):
                raise serializers.ValidationError(
                    {"url": ["slurmrestd's address: http(s)://host:port or unix:/path/to/socket"]}
                )
            refused = slurmrestd_url_refusal(url, settings.KUAE_SCRAPE_ALLOW)
            if refused:
                raise serializers.ValidationError(
                    {"url": [f"KUAE may not send the Slurm JWT there: {refused}"]}
                )
        elif url and not url.startswith("/"):
            raise serializers.ValidationError(
                {"url": ["for cli, the absolute path of slurm.conf (or leave it out)"]}
            )
        return attrs


@extend_schema_field(SlurmLinkSerializer(allow_null=True))
class SlurmLinkField(serializers.Field):
    """`slurm` on a cluster: `{mode, url}` or null (no scheduler connection)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(source="*", required=False, **kwargs)

    def validate_empty_values(self, data: Any) -> tuple[bool, Any]:
        if data is None:  # null: the cluster names no scheduler
            return True, {"slurm_kind": "", "slurm_url": ""}
        return super().validate_empty_values(data)

    def to_internal_value(self, data: Any) -> dict[str, str]:
        link = SlurmLinkSerializer(data=data)
        if not isinstance(data, dict):
            raise serializers.ValidationError("an object {mode, url} or null")
        link.is_valid(raise_exception=True)
        return {"slurm_kind": link.validated_data["mode"], "slurm_url": link.validated_data["url"]}

    def to_representation(self, value: Cluster) -> dict[str, str] | None:
        if not value.slurm_kind:
            return None
        return {"mode": value.slurm_kind, "url": value.slurm_url}


class ClusterDetailSerializer(ClusterSerializer):
    """A cluster with its GPU accounting (`gpus`, set by the view), its scheduler link
    (`slurm`, null when none), whether KUAE's drains reach it (`actuation`) and the
    Prometheus its GPU checks read from (`prometheus_url`, empty when none) and the Celery
    queue its checks and syncs go to (`queue`, empty: the shared one)."""

    gpus = GpuAccountSerializer(read_only=True, source="gpu_account")
    slurm = SlurmLinkField()
    actuation = serializers.ChoiceField(choices=ActuationMode.choices, required=False)
    prometheus_url = serializers.CharField(
        max_length=500,
        required=False,
        allow_blank=True,
        validators=[validate_prometheus_url],
        help_text="the Prometheus-API server the GPU checks read from "
        "(docs/integrations.md, 2d. Prometheus); "
        "empty: telemetry is posted to KUAE",
    )
    required_mounts = serializers.JSONField(
        required=False,
        help_text="mount points every node must have, writable and healthy, judged by the "
        'storage check (docs/checks.md, `storage`), e.g. ["/checkpoints", "/scratch"]: '
        f"absolute paths, at most {MAX_MOUNTS}, each at most {MAX_LENGTH} characters, none twice",
    )

    class Meta(ClusterSerializer.Meta):
        fields = [
            *ClusterSerializer.Meta.fields,
            "gpus",
            "slurm",
            "actuation",
            "prometheus_url",
            "queue",
            "required_mounts",
            "automation_paused",
            "automation_reason",
            "automation_by",
            "automation_at",
        ]
        read_only_fields = [
            "name",
            "created_at",
            "automation_paused",
            "automation_reason",
            "automation_by",
            "automation_at",
        ]

    def validate_required_mounts(self, value: object) -> list[str]:
        """Absolute paths, none twice (apps.fleet.mounts.mounts_clean); the error names the
        entry, `required_mounts[i]`."""
        try:
            return mounts_clean(value)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from exc


class NodeSerializer(serializers.ModelSerializer):
    """A node as lists show it."""

    cluster = ClusterNameField(read_only=True)

    class Meta:
        model = Node
        fields = [
            "hostname",
            "cluster",
            "rack",
            "switch",
            "pdu",
            "nvlink_domain",
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
    """A GPU with its latest telemetry values; `vendor` as reported, else read from its
    model's name ('' when neither says: docs/pages.md, Vendors and models)."""

    vendor = serializers.CharField(source="vendor_known", read_only=True)

    class Meta:
        model = GPU
        fields = ["index", "uuid", "vendor", "model", "metrics", "updated_at"]
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
    switch = serializers.CharField(
        max_length=64, required=False, allow_blank=True, default="", help_text="its leaf switch"
    )
    pdu = serializers.CharField(
        max_length=64, required=False, allow_blank=True, default="", help_text="its power feed"
    )
    nvlink_domain = serializers.CharField(
        max_length=64,
        required=False,
        allow_blank=True,
        default="",
        help_text="its NVLink domain (an NVL72 rack, an NVSwitch tray)",
    )
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


class TopologyNodeSerializer(serializers.Serializer):
    """One node's place in a `POST nodes/topology/` body: a field left out stays, null or ""
    clears it."""

    hostname = NodeNameField()
    rack = serializers.CharField(max_length=64, required=False, allow_null=True, allow_blank=True)
    switch = serializers.CharField(max_length=64, required=False, allow_null=True, allow_blank=True)
    pdu = serializers.CharField(max_length=64, required=False, allow_null=True, allow_blank=True)
    nvlink_domain = serializers.CharField(
        max_length=64, required=False, allow_null=True, allow_blank=True
    )


class TopologySerializer(serializers.Serializer):
    """`POST nodes/topology/` body: each node's hostname and the fields to set; a field
    left out stays as it is, null or "" clears it. An unknown hostname or a bad value is a
    400 naming `nodes[i].field`, and nothing is written."""

    nodes = TopologyNodeSerializer(many=True)


class TopologyResultSerializer(serializers.Serializer):
    """`POST nodes/topology/` answer."""

    nodes = serializers.IntegerField(help_text="nodes the request named")
    changed = serializers.IntegerField(help_text="nodes whose place changed")


class AutomationSerializer(serializers.Serializer):
    """`POST clusters/{name}/automation/` body: pause or resume automation (docs/on-call.md)."""

    paused = serializers.BooleanField()
    reason = serializers.CharField(max_length=300, allow_blank=True, default="")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["paused"] and not attrs["reason"].strip():
            raise serializers.ValidationError({"reason": ["say why automation is paused"]})
        return attrs


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
