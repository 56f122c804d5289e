"""A node's NIC ports over a time range, for the node page's port charts: charted like its
GPUs (docs/integrations.md, NIC ports).

From the cluster's Prometheus when it names one: per port, how fast each fabric error counter
grew (`rate()` of node_exporter's `node_infiniband_*_total`, one `query_range` per panel for
all the node's ports, selected by the `instance` label's host and split by the `device` and
`port` labels) and its state. Without one, from what KUAE keeps itself: the node's 5-minute
port rollups (`PortRollup`), each counter's growth summed over the node's ports and the
ports not ACTIVE — per node, not per port, and the charts say so.
"""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from apps.common.words import Words
from apps.fleet.models import Node
from apps.telemetry.gpu_history import (
    GPUHistory,
    Panel,
    Trace,
    Window,
    _duration,
    panel_ranges,
    trace_of,
)
from apps.telemetry.infiniband import PREFIX, STATES
from apps.telemetry.models import PortRollup
from apps.telemetry.names import ROLLUP_SECONDS
from apps.telemetry.prometheus_source import SourceDown
from apps.telemetry.promql import MAX_POINTS, port_range_query


def _rate(key: str, series: str, title: Words) -> Panel:
    """A chart of an error counter's growth per second (node_exporter's `series`)."""
    return Panel(key, f"{PREFIX}{series}", title, "/s", tozero=True, hover="%{y:.3g}")


# The error counters charted, as their growth per second: those that take a port out of
# service first, then those that warn.
COUNTER_PANELS = (
    _rate("link_downed", "link_downed_total", _("Link downed")),
    _rate(
        "local_link_integrity_errors",
        "local_link_integrity_errors_total",
        _("Link integrity errors"),
    ),
    _rate(
        "excessive_buffer_overrun_errors",
        "excessive_buffer_overrun_errors_total",
        _("Buffer overrun errors"),
    ),
    _rate("link_error_recovery", "link_error_recovery_total", _("Link error recoveries")),
    _rate("symbol_error", "symbol_error_total", _("Symbol errors")),
    _rate("port_rcv_errors", "port_errors_received_total", _("Receive errors")),
    _rate("port_xmit_discards", "port_discards_transmitted_total", _("Transmit discards")),
)
# Per port from Prometheus: its state as node_exporter numbers it.
STATE_PANEL = Panel(
    "state",
    f"{PREFIX}state_id",
    _("State"),
    "",
    hover="%{y:.0f}",
    ticks=tuple(sorted(STATES.items())),
)
# Per node from the rollups: the most ports not ACTIVE at once in each bucket.
NOT_ACTIVE_PANEL = Panel("not_active", "", _("Ports not ACTIVE"), _("ports"), tozero=True)


def node_port_history(*, node: Node, window: Window) -> GPUHistory:
    """The node's port charts over `window`: per port from the cluster's Prometheus (one
    `query_range` per panel), else per node from KUAE's 5-minute port rollups."""
    if node.cluster.prometheus_url:
        return _from_prometheus(node, window)
    return _from_rollups(node, window)


def _from_prometheus(node: Node, window: Window) -> GPUHistory:
    cluster = node.cluster
    history = GPUHistory(window, "prometheus", per_gpu=True, what=_("port series"))
    # rate() needs two samples in its range: at least 2 minutes, else the step.
    rate_s = max(window.step_s, 120)
    history.note = (
        f"Per port from {cluster.prometheus_url}: each error counter's growth per second "
        f"(rate over {_duration(rate_s)}), one point every {_duration(window.step_s)}."
    )
    names = [node.hostname, *(str(a) for a in node.addresses or [])]
    queries = [
        (
            panel,
            port_range_query(panel.field, names, rate_s=None if panel is STATE_PANEL else rate_s),
        )
        for panel in (*COUNTER_PANELS, STATE_PANEL)
    ]
    try:
        answered = panel_ranges(cluster, window, queries)
    except SourceDown as exc:
        history.panels, history.error = [], str(exc)
        return history
    ports: dict[str, int] = {}  # device/port → its colour index, in order of first sight
    for panel, series in answered:
        traces = []
        for labels, points in sorted(
            series, key=lambda s: (s[0].get("device", ""), _number(s[0].get("port", "")))
        ):
            name = f"{labels.get('device', '?')}/{labels.get('port', '?')}"
            traces.append(trace_of(name, points, ports.setdefault(name, len(ports))))
        history.panels.append((panel, traces))
    return history


def _number(text: str) -> int:
    return int(text) if text.isdigit() else -1


def _from_rollups(node: Node, window: Window) -> GPUHistory:
    """The node's port rollups merged into buckets of the window's step (at least 5
    minutes): each counter's growth over the bucket, summed over the node's ports, per
    second; and the most ports not ACTIVE at once."""
    step = max(ROLLUP_SECONDS, window.step_s)
    history = GPUHistory(window, "rollups", per_gpu=False, what=_("port readings"))
    history.note = (
        "This cluster has no Prometheus, and KUAE keeps only each port's latest and previous "
        "readings (in the table above): these charts are the node's 5-minute port rollups — "
        "per node, not per port: each error counter's growth summed over all its ports, per "
        f"second, and the most ports not ACTIVE at once — one point every {_duration(step)}. "
        "Name the cluster's Prometheus to see each port."
    )
    keys = [p.key for p in COUNTER_PANELS]
    rows = (
        PortRollup.objects.filter(node=node, bucket__gte=window.start, bucket__lte=window.end)
        .order_by("bucket")
        .values_list("bucket", "not_active", *keys)
    )
    merged: dict[int, list[float]] = {}
    for bucket, not_active, *growth in rows.iterator(chunk_size=2000):
        slot = int(bucket.timestamp()) // step * step
        acc = merged.get(slot)
        if acc is None:
            merged[slot] = [float(not_active), *growth]
            continue
        acc[0] = max(acc[0], not_active)
        for i, value in enumerate(growth, start=1):
            acc[i] += value
    slots = sorted(merged)[-MAX_POINTS:]
    x = [float(slot) for slot in slots]
    label = "node, summed over ports"
    for i, panel in enumerate(COUNTER_PANELS, start=1):
        y: list[float | None] = [merged[slot][i] / step for slot in slots]
        history.panels.append((panel, [Trace(label, x, y)]))
    y_down: list[float | None] = [merged[slot][0] for slot in slots]
    history.panels.append((NOT_ACTIVE_PANEL, [Trace(str(_("node")), x, y_down)]))
    return history
