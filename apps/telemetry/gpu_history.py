"""A node's per-GPU telemetry over a time range, for the node page's charts
(docs/integrations.md, 2d. Prometheus as the telemetry source).

From the cluster's Prometheus when it names one: one `query_range` per metric for all the
node's GPUs, of the series its GPUs' exporter publishes for it (the mapping files,
apps.telemetry.exporters; a metric that exporter cannot publish is asked nothing), the
step chosen so each series has at most 2,000 points (`promql.range_step`).
Without one, from what KUAE keeps itself: the 5-minute rollups per node (mean over the
node's GPUs, with the lowest and highest GPU) — KUAE stores no per-GPU history of posted
telemetry, only each GPU's latest values, and the charts say so.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from apps.common.words import Words
from apps.fleet.models import Cluster, Node
from apps.fleet.vendors import vendor_of
from apps.telemetry.exporters import Exporter, cannot_report, chart_lines, exporter, exporter_for
from apps.telemetry.models import NodeRollup
from apps.telemetry.names import ROLLUP_SECONDS
from apps.telemetry.prometheus_source import SourceDown, range_query, token_for
from apps.telemetry.promql import MAX_POINTS, exporter_range_query, range_step


@dataclass(frozen=True)
class Panel:
    """One chart of the node's GPUs (or ports): the metric as KUAE names it, its dcgm field
    (a GPU chart asks each exporter's series of `key` through its mapping file; a port chart
    the node_exporter series), a title; optionally its y axis from zero, its hover format
    and named ticks (value → word, e.g. a port's state)."""

    key: str
    field: str
    title: Words
    unit: Words
    tozero: bool = False
    hover: str = ""
    ticks: tuple[tuple[int, str], ...] = ()
    # A metric with a fixed scale (a fraction, a percentage) is drawn on it, whatever its
    # readings: tensor activity on 0–1, never Plotly's empty 0–4.
    bounds: tuple[float, float] | None = None


GPU_PANELS = (
    Panel("temp_c", "DCGM_FI_DEV_GPU_TEMP", _("Temperature"), "°C"),
    Panel("power_w", "DCGM_FI_DEV_POWER_USAGE", _("Power"), "W"),
    Panel("sm_clock_mhz", "DCGM_FI_DEV_SM_CLOCK", _("SM clock"), "MHz"),
    Panel("gpu_util", "DCGM_FI_DEV_GPU_UTIL", _("Utilisation"), "%", bounds=(0, 100)),
    Panel("mem_used_mib", "DCGM_FI_DEV_FB_USED", _("Framebuffer used"), "MiB"),
    Panel(
        "tensor_active",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        _("Tensor activity"),
        "0–1",
        bounds=(0, 1),
    ),
)

# The range buttons (docs/pages.md, Charts): query value → (label, length).
RANGES: dict[str, tuple[str, dt.timedelta]] = {
    "1h": ("1 h", dt.timedelta(hours=1)),
    "6h": ("6 h", dt.timedelta(hours=6)),
    "24h": ("24 h", dt.timedelta(hours=24)),
    "7d": ("7 d", dt.timedelta(days=7)),
    "30d": ("30 d", dt.timedelta(days=30)),
}
DEFAULT_RANGE = "24h"
# A custom range may be at most this long and start at most this far back.
CUSTOM_MAX = dt.timedelta(days=31)
CUSTOM_OLDEST = dt.timedelta(days=400)


@dataclass(frozen=True)
class Window:
    """The range a chart shows: from `start` to `end`, one point every `step_s` seconds.
    `key` is the range button's value, or "custom"."""

    key: str
    label: str
    start: dt.datetime
    end: dt.datetime
    step_s: int


def _when(text: str) -> dt.datetime | None:
    parsed = parse_datetime(text.strip()) if text else None
    if parsed is None:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def window_from(params: Mapping[str, str], *, now: dt.datetime) -> tuple[Window, str]:
    """The window a request asks for (`range=7d`, or `start=` and `end=` in UTC, as
    `2026-01-05T08:00`), and what was wrong with a custom range ("" when nothing; the last
    24 h are shown then)."""
    start_text, end_text = params.get("start", ""), params.get("end", "")
    problem = ""
    if start_text or end_text:
        start, end = _when(start_text), _when(end_text or now.isoformat())
        if start is None or end is None:
            problem = gettext(
                "Start and end must be dates and times, such as 2026-01-05T08:00 (UTC)."
            )
        else:
            end = min(end, now)
            if start >= end:
                problem = gettext("The start must be before the end (and before now).")
            elif end - start > CUSTOM_MAX:
                problem = gettext("A custom range may be at most %(days)s days long.") % {
                    "days": CUSTOM_MAX.days
                }
            elif start < now - CUSTOM_OLDEST:
                problem = gettext("A custom range may start at most %(days)s days ago.") % {
                    "days": CUSTOM_OLDEST.days
                }
            else:
                label = f"{start:%Y-%m-%d %H:%M} – {end:%Y-%m-%d %H:%M} UTC"
                return Window("custom", label, start, end, range_step(start, end)), ""
    key = params.get("range", DEFAULT_RANGE)
    if key not in RANGES:
        key = DEFAULT_RANGE
    label, length = RANGES[key]
    start = now - length
    return Window(key, label, start, now, range_step(start, now)), problem


@dataclass(frozen=True)
class Trace:
    """One line of a panel: a GPU's series (`gpu` = its index) or, from rollups, the
    node's mean with its lowest and highest GPU (`low`, `high`)."""

    name: str
    x: list[float]
    y: list[float | None]
    gpu: int | None = None
    low: list[float | None] | None = None
    high: list[float | None] | None = None


@dataclass
class GPUHistory:
    """What the node's charts show: per panel its traces, where they came from, a note to
    show next to them, and the error when the source did not answer (no panels then)."""

    window: Window
    source: str  # "prometheus" or "rollups"
    per_gpu: bool
    panels: list[tuple[Panel, list[Trace]]] = field(default_factory=list)
    note: str = ""
    error: str = ""
    what: Words = _("telemetry")  # what a chart with nothing in its range had none of
    # panel key → the exporter that cannot report it ("not reported by …"; no query asked)
    blind: dict[str, str] = field(default_factory=dict)


def node_gpu_history(*, node: Node, window: Window) -> GPUHistory:
    """The node's charts over `window`: per GPU from the cluster's Prometheus (one
    `query_range` per panel), else per node from KUAE's 5-minute rollups."""
    if node.cluster.prometheus_url:
        return _from_prometheus(node, window)
    return _from_rollups(node, window)


def node_exporter(node: Node) -> Exporter:
    """The exporter the node's GPUs report through (docs/integrations.md, Exporters and
    their mapping files): the most common among its GPUs' `source` (else their vendor, else
    their model's), else the cluster's model's vendor, else dcgm-exporter. A cluster may mix
    vendors; one node does not."""
    counts: Counter[str] = Counter()
    for source, vendor, model in node.gpus.values_list("source", "vendor", "model"):
        made = exporter_for(source, vendor_of(vendor, model))
        if made is not None:
            counts[made.slug] += 1
    if counts:
        return exporter(counts.most_common(1)[0][0])
    return exporter_for("", vendor_of("", node.cluster.gpu_model)) or exporter("dcgm")


def _from_prometheus(node: Node, window: Window) -> GPUHistory:
    cluster = node.cluster
    made = node_exporter(node)
    history = GPUHistory(window, "prometheus", per_gpu=True)
    history.note = (
        f"Per GPU from {cluster.prometheus_url} ({made.name}), one point every "
        f"{_duration(window.step_s)}."
    )
    queries: list[tuple[Panel, str]] = []
    for panel in GPU_PANELS:
        query = exporter_range_query(made, panel.key, node.hostname)
        if query is None:  # its file cannot fill it: no query, the panel says so
            history.blind[panel.key] = cannot_report(made.slug, [panel.key])
        else:
            queries.append((panel, query))
    try:
        answered = dict(panel_ranges(cluster, window, queries))
    except SourceDown as exc:
        history.panels, history.error = [], str(exc)
        return history
    for panel in GPU_PANELS:
        lines = chart_lines(made, panel.key)
        label = lines[0].index_label if lines else ""
        traces = [
            trace_of(f"GPU {labels[label]}", points, int(labels[label]))
            for labels, points in answered.get(panel, [])
            if labels.get(label, "").isdigit()
        ]
        traces.sort(key=lambda t: t.gpu if t.gpu is not None else -1)
        history.panels.append((panel, traces))
    return history


def panel_ranges(
    cluster: Cluster, window: Window, queries: Sequence[tuple[Panel, str]]
) -> list[tuple[Panel, list[tuple[dict[str, str], list[tuple[float, float]]]]]]:
    """Each panel's `query_range` over `window` from the cluster's Prometheus, in order;
    SourceDown at the first that does not answer."""
    token = token_for(cluster)
    return [
        (
            panel,
            range_query(
                cluster.prometheus_url,
                query,
                start=window.start,
                end=window.end,
                step_s=window.step_s,
                token=token,
            ),
        )
        for panel, query in queries
    ]


def trace_of(name: str, points: Sequence[tuple[float, float]], gpu: int) -> Trace:
    """A chart's trace of a series' newest `MAX_POINTS` points."""
    points = points[-MAX_POINTS:]
    return Trace(name, [ts for ts, _ in points], [value for _, value in points], gpu=gpu)


def _from_rollups(node: Node, window: Window) -> GPUHistory:
    """The node's rollups merged into buckets of the window's step (at least 5 minutes):
    the mean of the node's GPUs, and the lowest and highest GPU, per bucket."""
    step = max(ROLLUP_SECONDS, window.step_s)
    history = GPUHistory(window, "rollups", per_gpu=False)
    history.note = (
        "This cluster has no Prometheus, and KUAE keeps no history per GPU of the telemetry "
        "posted to it (only each GPU's latest values, in the table above): these are the "
        "node's 5-minute rollups — the mean over its GPUs, with a band from the lowest to "
        f"the highest GPU — one point every {_duration(step)}. Name the cluster's "
        "Prometheus to see each GPU."
    )
    columns = ["bucket"] + [
        f"{p.key}_{part}" for p in GPU_PANELS for part in ("min", "max", "sum", "n")
    ]
    rows = (
        NodeRollup.objects.filter(node=node, bucket__gte=window.start, bucket__lte=window.end)
        .order_by("bucket")
        .values_list(*columns)
    )
    merged: dict[int, dict[str, list[float]]] = {}
    for row in rows.iterator(chunk_size=2000):
        values = dict(zip(columns, row, strict=True))
        slot = int(values["bucket"].timestamp()) // step * step
        acc = merged.setdefault(slot, {})
        for p in GPU_PANELS:
            n = values[f"{p.key}_n"] or 0
            if not n:
                continue
            lo, hi, total = values[f"{p.key}_min"], values[f"{p.key}_max"], values[f"{p.key}_sum"]
            have = acc.get(p.key)
            if have is None:
                acc[p.key] = [lo, hi, total, n]
            else:
                have[0] = min(have[0], lo)
                have[1] = max(have[1], hi)
                have[2] += total
                have[3] += n
    slots = sorted(merged)[-MAX_POINTS:]
    for p in GPU_PANELS:
        x, mean, low, high = [], [], [], []
        for slot in slots:
            acc_p = merged[slot].get(p.key)
            x.append(float(slot))
            mean.append(acc_p[2] / acc_p[3] if acc_p else None)
            low.append(acc_p[0] if acc_p else None)
            high.append(acc_p[1] if acc_p else None)
        history.panels.append((p, [Trace(str(_("node mean")), x, mean, low=low, high=high)]))
    return history


def _duration(seconds: int) -> str:
    if seconds % 86400 == 0:
        return f"{seconds // 86400} d"
    if seconds % 3600 == 0:
        return f"{seconds // 3600} h"
    if seconds % 60 == 0:
        return f"{seconds // 60} min"
    return f"{seconds} s"
