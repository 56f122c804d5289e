"""Intake endpoints: JSON telemetry samples (with NIC ports and host readings),
dcgm-exporter's (and node_exporter's InfiniBand and host) Prometheus text, and events from nodes'
kernel logs; and a node's host readings (`GET nodes/{hostname}/host/`)."""

from __future__ import annotations

from dataclasses import asdict

from django.http import Http404
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.choices import AGENTS, READERS
from apps.common.parsers import FastJSONParser, PlainTextParser
from apps.common.timeutil import not_future, parse_ts
from apps.fleet.scope import require_nodes
from apps.fleet.selectors import node_get
from apps.telemetry.host import parse_telemetry_with_host
from apps.telemetry.host_card import node_host_readings, not_reported
from apps.telemetry.infiniband import NoHostError
from apps.telemetry.intake import parse_event_batch
from apps.telemetry.prometheus import ExpositionError, parse_exposition
from apps.telemetry.services import (
    events_ingest,
    telemetry_batch_ingest,
)


class TelemetryBatchSerializer(serializers.Serializer):
    """`{samples: [{node, gpu, ts, metrics: {name: number}}], ports: [{node, device, port,
    ts, metrics: {state?, phys_state?, rate_gbps?, counter: integer}, switch?,
    switch_port?}], host: [{node, kind, subject, ts, values: {...}, source?}]}`
    (documentation only): any list may be absent, not all empty. A NIC
    port (`device` such as `mlx5_0`, `port` number) is made on its first reading, at most
    64 per node; `state` is ACTIVE, DOWN, INIT, ARMED, ACTIVE_DEFER… (sysfs's `4: ACTIVE` is
    read too; a state not among them is kept by its name, at most 32 characters, and is not
    ACTIVE), `phys_state` LinkUp, Polling, Disabled, … (the same), counters are
    non-negative integers. A host reading's `kind` is `memory` (subject `mc0`: `ce_total`,
    `ue_total`), `filesystem` (a mount point: `device`, `fstype`, `readonly`, `size_bytes`,
    `avail_bytes`, `device_error`), `pcie` (a PCI address: `role`, `link_width`,
    `max_link_width`, `link_speed_gts`, `max_link_speed_gts`, `aer_correctable_total`,
    `aer_nonfatal_total`, `aer_fatal_total`) or `clock` (`system`: `offset_s`, `synced`); a
    pseudo filesystem's reading is not stored; at most 256 subjects per node."""

    samples = serializers.ListField(child=serializers.DictField(), required=False)
    ports = serializers.ListField(child=serializers.DictField(), required=False)
    host = serializers.ListField(child=serializers.DictField(), required=False)


class IngestResultSerializer(serializers.Serializer):
    """`{accepted, applied, stale, events}`: `stale` samples were not newer than ones stored."""

    accepted = serializers.IntegerField()
    applied = serializers.IntegerField()
    stale = serializers.IntegerField()
    events = serializers.IntegerField()


class TelemetryResultSerializer(IngestResultSerializer):
    """`{accepted, applied, stale, events, ports, ports_stale}`: `ports` port readings
    applied, `ports_stale` not newer than the port's stored reading (a re-post, an older
    one)."""

    ports = serializers.IntegerField()
    ports_stale = serializers.IntegerField()


class TelemetryBatchResultSerializer(TelemetryResultSerializer):
    """`{accepted, applied, stale, events, ports, ports_stale, host, host_stale,
    host_skipped}`: `host` host readings applied, `host_stale` not newer than their
    subject's stored reading, `host_skipped` not stored (pseudo filesystems)."""

    host = serializers.IntegerField()
    host_stale = serializers.IntegerField()
    host_skipped = serializers.IntegerField()


class EventBatchSerializer(serializers.Serializer):
    """`{events: [{node, ts, kind, code?, gpu?, pci_bus?, port?, rank?, value?, message?}]}`
    (documentation only; at most 10,000 events). An XID (`kind: "xid"`) needs `code` and
    `gpu` or `pci_bus` or both; a kind a check declares for a port needs `port`
    (`mlx5_0/1`), for a rank `rank`; `value` is the number reported (1 by default)."""

    events = serializers.ListField(child=serializers.DictField(), max_length=10_000)


class EventResultSerializer(serializers.Serializer):
    """`{accepted, events}`: `events` is how many were new (a re-sent batch stores none)."""

    accepted = serializers.IntegerField()
    events = serializers.IntegerField()


class TelemetryIngestView(APIView):
    """`POST ingest/telemetry/`: per-GPU samples, NIC ports' readings and host readings, all
    or nothing."""

    roles = {"POST": AGENTS}
    agent_scoped = True
    parser_classes = [FastJSONParser]

    @extend_schema(
        request=TelemetryBatchSerializer, responses={202: TelemetryBatchResultSerializer}
    )
    def post(self, request: Request) -> Response:
        samples, readings, host = parse_telemetry_with_host(request.data, now=timezone.now())
        require_nodes(
            request.user,
            {s.node for s in samples} | {r.node for r in readings} | {h.node for h in host},
        )
        result, ports, hosts = telemetry_batch_ingest(samples=samples, readings=readings, host=host)
        data = {
            **asdict(result),
            "ports": ports.applied,
            "ports_stale": ports.stale,
            "host": hosts.applied,
            "host_stale": hosts.stale,
            "host_skipped": hosts.skipped,
        }
        return Response(TelemetryBatchResultSerializer(data).data, status=status.HTTP_202_ACCEPTED)


class PrometheusIngestView(APIView):
    """`POST ingest/prometheus/`: dcgm-exporter `/metrics` text as it is, and node_exporter's
    `node_infiniband_*` series (NIC ports) and host series (EDAC, filesystems, the clock:
    host readings), both filed under `?node=`, all or nothing."""

    roles = {"POST": AGENTS}
    agent_scoped = True
    parser_classes = [PlainTextParser]

    @extend_schema(
        request={"text/plain": str},
        parameters=[
            OpenApiParameter(
                "node",
                str,
                description="host, when the text has no Hostname label (node_exporter's never has)",
            ),
            OpenApiParameter("ts", str, description="scrape time (default: receive time)"),
        ],
        responses={202: TelemetryBatchResultSerializer},
    )
    def post(self, request: Request) -> Response:
        ts = now = timezone.now()
        if request.query_params.get("ts"):
            try:
                ts = not_future(parse_ts(request.query_params["ts"]), now)
            except ValueError as exc:
                raise serializers.ValidationError({"ts": [str(exc)]}) from exc
        text = request.data if isinstance(request.data, str) else ""
        node = request.query_params.get("node") or None
        try:
            samples, readings, host = parse_exposition(text, ts=ts, node=node)
        except ExpositionError as exc:
            raise serializers.ValidationError(
                {"body": [str(exc)], "line": [str(exc.line)]}
            ) from exc
        except NoHostError as exc:
            raise serializers.ValidationError({"node": [str(exc)]}) from exc
        if not samples and not readings and not host:
            raise serializers.ValidationError(
                {
                    "body": [
                        "no per-GPU samples with a Hostname/hostname label (or ?node=), "
                        "nor node_infiniband_* ports, nor node_exporter's host series"
                    ]
                }
            )
        require_nodes(
            request.user,
            {s.node for s in samples} | {r.node for r in readings} | {h.node for h in host},
        )
        result, ports, hosts = telemetry_batch_ingest(samples=samples, readings=readings, host=host)
        data = {
            **asdict(result),
            "ports": ports.applied,
            "ports_stale": ports.stale,
            "host": hosts.applied,
            "host_stale": hosts.stale,
            "host_skipped": hosts.skipped,
        }
        return Response(TelemetryBatchResultSerializer(data).data, status=status.HTTP_202_ACCEPTED)


class EventIngestView(APIView):
    """`POST ingest/events/`: XIDs from nodes' kernel logs (docs/xid.md), and the events of
    the kinds the checks declare (docs/checks.md, Writing a check), all or nothing."""

    roles = {"POST": AGENTS}
    agent_scoped = True
    parser_classes = [FastJSONParser]

    @extend_schema(request=EventBatchSerializer, responses={202: EventResultSerializer})
    def post(self, request: Request) -> Response:
        events = parse_event_batch(request.data, now=timezone.now())
        require_nodes(request.user, {e.node for e in events})
        result = events_ingest(events=events)
        return Response(EventResultSerializer(result).data, status=status.HTTP_202_ACCEPTED)


class HostReadingSerializer(serializers.Serializer):
    """A subject's latest host reading and the one before it: `kind` (`memory`,
    `filesystem`, `pcie`, `clock`), `subject` (`mc0`, `/checkpoints`, `0000:17:00.0`,
    `system`), `values` by the kind's names, `source` (`agent`, `node_exporter`,
    `prometheus`)."""

    kind = serializers.CharField()
    subject = serializers.CharField()
    ts = serializers.DateTimeField(help_text="the latest reading's time")
    values = serializers.DictField(help_text="the latest reading's values")
    prev_ts = serializers.DateTimeField(
        allow_null=True, help_text="the previous reading's time (null: none yet)"
    )
    prev_values = serializers.DictField(help_text="the previous reading's values")
    # (`source` is a serializer field's own attribute: this field is declared by name)


HostReadingSerializer._declared_fields["source"] = serializers.CharField(
    help_text="where the latest reading came from"
)


class NodeHostSerializer(serializers.Serializer):
    """`{node, readings: [...], not_reported: [kind]}`: the kinds of which the node has no
    reading are not monitored there, never passing."""

    node = serializers.CharField()
    readings = HostReadingSerializer(many=True)
    not_reported = serializers.ListField(child=serializers.CharField())


class NodeHostView(APIView):
    """`GET nodes/{hostname}/host/`: the node's host readings (memory controllers, mounts,
    PCIe devices, clock), each subject's latest values and the previous reading's, and the
    kinds it never reported (docs/integrations.md, Host readings)."""

    roles = {"GET": READERS}

    @extend_schema(responses=NodeHostSerializer)
    def get(self, request: Request, hostname: str) -> Response:
        node = node_get(hostname=hostname)
        if node is None:
            raise Http404(f"no node {hostname}")
        readings = node_host_readings(node)
        data = {"node": node.hostname, "readings": readings, "not_reported": not_reported(readings)}
        return Response(NodeHostSerializer(data).data)
