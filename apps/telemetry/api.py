"""Intake endpoints: JSON telemetry samples, dcgm-exporter's (and node_exporter's InfiniBand)
Prometheus text, and events from nodes' kernel logs."""

from __future__ import annotations

from dataclasses import asdict

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.choices import AGENTS
from apps.common.parsers import FastJSONParser, PlainTextParser
from apps.common.timeutil import not_future, parse_ts
from apps.fleet.scope import require_nodes
from apps.telemetry.infiniband import NoHostError
from apps.telemetry.intake import parse_event_batch
from apps.telemetry.ports import parse_telemetry_with_ports
from apps.telemetry.prometheus import ExpositionError, parse_exposition
from apps.telemetry.services import events_ingest, telemetry_with_ports_ingest


class TelemetryBatchSerializer(serializers.Serializer):
    """`{samples: [{node, gpu, ts, metrics: {name: number}}], ports: [{node, device, port,
    ts, metrics: {state?, phys_state?, rate_gbps?, counter: integer}, switch?,
    switch_port?}]}` (documentation only): either list may be absent, not both empty. A NIC
    port (`device` such as `mlx5_0`, `port` number) is made on its first reading, at most
    64 per node; `state` is ACTIVE, DOWN, INIT, ARMED, ACTIVE_DEFER… (sysfs's `4: ACTIVE` is
    read too; a state not among them is kept by its name, at most 32 characters, and is not
    ACTIVE), `phys_state` LinkUp, Polling, Disabled, … (the same), counters are
    non-negative integers."""

    samples = serializers.ListField(child=serializers.DictField(), required=False)
    ports = serializers.ListField(child=serializers.DictField(), required=False)


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
    """`POST ingest/telemetry/`: per-GPU samples and NIC ports' readings, all or nothing."""

    roles = {"POST": AGENTS}
    agent_scoped = True
    parser_classes = [FastJSONParser]

    @extend_schema(request=TelemetryBatchSerializer, responses={202: TelemetryResultSerializer})
    def post(self, request: Request) -> Response:
        samples, readings = parse_telemetry_with_ports(request.data, now=timezone.now())
        require_nodes(request.user, {s.node for s in samples} | {r.node for r in readings})
        result, ports = telemetry_with_ports_ingest(samples=samples, readings=readings)
        data = {**asdict(result), "ports": ports.applied, "ports_stale": ports.stale}
        return Response(TelemetryResultSerializer(data).data, status=status.HTTP_202_ACCEPTED)


class PrometheusIngestView(APIView):
    """`POST ingest/prometheus/`: dcgm-exporter `/metrics` text as it is, and node_exporter's
    `node_infiniband_*` series (NIC ports, filed under `?node=`), all or nothing."""

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
        responses={202: TelemetryResultSerializer},
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
            samples, readings = parse_exposition(text, ts=ts, node=node)
        except ExpositionError as exc:
            raise serializers.ValidationError(
                {"body": [str(exc)], "line": [str(exc.line)]}
            ) from exc
        except NoHostError as exc:
            raise serializers.ValidationError({"node": [str(exc)]}) from exc
        if not samples and not readings:
            raise serializers.ValidationError(
                {
                    "body": [
                        "no per-GPU samples with a Hostname/hostname label (or ?node=), "
                        "nor node_infiniband_* ports"
                    ]
                }
            )
        require_nodes(request.user, {s.node for s in samples} | {r.node for r in readings})
        result, ports = telemetry_with_ports_ingest(samples=samples, readings=readings)
        data = {**asdict(result), "ports": ports.applied, "ports_stale": ports.stale}
        return Response(TelemetryResultSerializer(data).data, status=status.HTTP_202_ACCEPTED)


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
