"""Telemetry on the node page (fleet's), lent to `common/panels.py` at start-up: its GPUs'
latest values and what they never reported, its NIC ports, its host, its charts, its events. The
fleet knows no telemetry (docs/architecture.md); these panels only read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils import timezone
from django.utils.http import urlencode

from apps.common import panels
from apps.fleet.models import Node
from apps.fleet.vendors import common_vendor
from apps.telemetry.exporters import temp_source
from apps.telemetry.gpu_history import RANGES, Window, window_from
from apps.telemetry.host_card import host_sections, kinds_in_words, node_host_readings
from apps.telemetry.models import Port
from apps.telemetry.monitored import port_gaps, reporting_gaps
from apps.telemetry.names import GPU_COLUMNS
from apps.telemetry.selectors import node_event_rows


def node_gpus(*, node: Node, params: Mapping[str, str]) -> dict[str, Any]:
    """The node's GPUs with their latest values, and the fields the checks need that some
    never reported (the GPUs come with the node: the page loads them with it)."""
    gpus = list(node.gpus.all())
    gaps, silent = reporting_gaps(
        ((g.index, g.metrics) for g in gpus), {g.index: g.source for g in gpus}
    )
    vendors = {g.index: g.vendor_known for g in gpus}
    for gpu in gpus:  # which temperature `temp_c` is: edge, junction, '' (dcgm-exporter's)
        setattr(gpu, "temp_source", temp_source(gpu.metrics or {}))  # noqa: B010
    return {
        "node": node,
        "gpus": gpus,
        "gpu_columns": GPU_COLUMNS,
        # A Model column only where the node's GPUs are of several models: the page's
        # header already names one model for all of them ("8 × NVIDIA H100 80GB HBM3").
        "several_models": len({node.cluster.model_of(g.model) for g in gpus}) > 1,
        "node_vendor": common_vendor(list(vendors.values())),
        "gaps": gaps,
        # dcgm-exporter's counters file is the advice for NVIDIA GPUs (or of no known
        # vendor) that could report a field and did not: not for another vendor's.
        "dcgm_advice": any(
            not gap.exporter and vendors[i] in ("nvidia", "") for gap in gaps for i in gap.gpus
        ),
        "silent_gpus": silent,
        "now": timezone.now(),
    }


def node_ports(*, node: Node, params: Mapping[str, str]) -> dict[str, Any]:
    """The node's NIC ports with their latest reading and the counters that grew since the
    previous one (one query), the counters the checks need that some do not report, and
    their charts over the range the page asks for (the GPU charts' range, `?range=` or
    `?start=&end=`)."""
    ports = list(Port.objects.filter(node=node))
    return {
        "ports": ports,
        "port_gaps": port_gaps((f"{p.device}/{p.port}", p.counters) for p in ports if p.ts),
        "now": timezone.now(),
        **node_charts(node=node, params=params),
    }


def node_host(*, node: Node, params: Mapping[str, str]) -> dict[str, Any]:
    """The node's host readings by kind (one query): memory controllers, mounts, PCIe
    devices, the clock, each subject's latest values and their age, and the kinds it never
    reported (docs/integrations.md, Host readings); the cluster's required mounts first
    (the node page loads the node with its cluster: no query more)."""
    readings = node_host_readings(node)
    required = list(node.cluster.required_mounts or [])
    sections = host_sections(readings, required)
    return {
        "node": node,
        "sections": sections,
        "kinds_in_words": kinds_in_words(sections),
        "reported": bool(readings),
        "required_mounts": required,
        "now": timezone.now(),
    }


def node_charts(*, node: Node, params: Mapping[str, str]) -> dict[str, Any]:
    """The node's per-GPU charts over the range the page's query asks for (`?range=` or
    `?start=&end=`), with the problem when it asks for one that cannot be shown."""
    window, problem = window_from(params, now=timezone.now())
    return {
        "node": node,
        "window": window,
        "window_problem": problem,
        "window_query": window_query(window),
        "ranges": [(key, label) for key, (label, _) in RANGES.items()],
    }


def node_events(*, node: Node) -> dict[str, Any]:
    """The node's events, newest first, each XID explained from NVIDIA's catalogue."""
    return {"events": node_event_rows(node=node), "now": timezone.now()}


def window_query(window: Window) -> str:
    """The query string that asks the charts' endpoint for `window`."""
    if window.key != "custom":
        return urlencode({"range": window.key})
    fmt = "%Y-%m-%dT%H:%M:%S"
    return urlencode({"start": window.start.strftime(fmt), "end": window.end.strftime(fmt)})


def panels_lend() -> None:
    """Lend the panels (from `TelemetryConfig.ready()`). In the node page's body the GPU
    table comes first, its NIC ports next and the charts last; the health app lends its
    checks between; the Host card follows the ports."""
    panels.lend(
        slot=panels.NODE_BODY, template="telemetry/_node_gpus.html", context=node_gpus, order=10
    )
    panels.lend(
        slot=panels.NODE_BODY, template="telemetry/_node_ports.html", context=node_ports, order=15
    )
    panels.lend(
        slot=panels.NODE_BODY, template="telemetry/_node_host.html", context=node_host, order=16
    )
    panels.lend(
        slot=panels.NODE_BODY,
        template="telemetry/_node_charts.html",
        context=node_charts,
        order=30,
    )
    panels.lend(slot=panels.NODE_FOOT, template="telemetry/_node_events.html", context=node_events)
