"""A cluster's GPU models side by side (docs/pages.md, Vendors and models): one row per model —
its GPUs, those that reported in the last FRESH, and each value as that model's GPUs report
it (the mean of their latest, the highest SM clock) — so a cluster of NVIDIA and Moore Threads
GPUs shows both, each with its own figures, never one averaged over two kinds of GPU.

A value none of a model's reporting GPUs sends is "not reported by <its way in>"
(dcgm-exporter, AMD's or Gaudi's exporter, MTML through the node agent): a gap of its
source, not a zero. Read from the telemetry stored (`GPU.metrics`), in one query.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, FloatField, Max, Q, Sum
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from apps.fleet.models import GPU, Cluster
from apps.fleet.vendors import VENDOR_LABELS, gpu_name, link_word, vendor_of
from apps.telemetry.exporters import exporter_for

# How recent a GPU's latest values must be to be counted, ranked and averaged.
FRESH = dt.timedelta(minutes=15)

# (metric, label, unit, how a model's GPUs' values combine: "mean" or "max", digits)
COLUMNS: tuple[tuple[str, str | Promise, str, str, int], ...] = (
    ("gpu_util", gettext_lazy("Util"), "%", "mean", 0),
    ("temp_c", gettext_lazy("Temp"), "°C", "mean", 0),
    ("mem_temp_c", gettext_lazy("Memory temp"), "°C", "mean", 0),
    ("power_w", gettext_lazy("Power"), "W", "mean", 0),
    ("sm_clock_mhz", gettext_lazy("SM clock, highest"), "MHz", "max", 0),
    ("tensor_active", gettext_lazy("Tensor"), "", "mean", 2),
    ("mem_used_mib", gettext_lazy("Memory used"), "MiB", "mean", 0),
)
# The way in of a vendor no exporter's mapping file names (docs/agent.md: MTML).
_AGENT_SOURCES = {"mthreads": gettext_lazy("MTML (the node agent)")}


@dataclass(frozen=True)
class Cell:
    """One model's value of one column: the value, or why there is none."""

    key: str
    value: float | None
    digits: int
    missing: str = ""  # "not reported by …" where its GPUs send no such value


@dataclass
class ModelRow:
    """One GPU model of a cluster and its GPUs' latest values."""

    model: str
    vendor: str
    gpus: int = 0
    reporting: int = 0
    source: str = ""  # its way in, as a person names it
    peak_tflops: float | None = None
    cells: list[Cell] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The model as a person reads it ("Moore Threads MTT S4000")."""
        return gpu_name(self.vendor, self.model)

    @property
    def vendor_label(self) -> str:
        """Its vendor as a person names it."""
        return VENDOR_LABELS.get(self.vendor, self.vendor or _("unknown"))

    @property
    def link(self) -> str:
        """Its vendor's word for its GPU-to-GPU links."""
        return link_word(self.vendor)


def source_words(source: str, vendor: str) -> str:
    """The way a GPU's telemetry comes in, as "not reported by …" names it."""
    made = exporter_for(source, vendor)
    if made is not None:
        return made.name
    return str(_AGENT_SOURCES.get(vendor) or _("its source"))


def _number(key: str) -> Cast:
    return Cast(KT(f"metrics__{key}"), FloatField())


def model_groups(*, cluster: Cluster, now: dt.datetime) -> list[dict[str, Any]]:
    """A row per (stored model name, vendor, way in) of the cluster's GPUs: `n` GPUs,
    `fresh` of them reported in the last FRESH, and per column `<key>__n` fresh GPUs report
    it and `<key>__v` their sum or highest (one query)."""
    fresh = Q(updated_at__gte=now - FRESH)
    aggregates: dict[str, Any] = {"n": Count("pk"), "fresh": Count("pk", filter=fresh)}
    for key, _label, _unit, how, _digits in COLUMNS:
        value = _number(key)
        aggregates[f"{key}__n"] = Count(value, filter=fresh)
        aggregates[f"{key}__v"] = (Sum if how == "mean" else Max)(value, filter=fresh)
    rows = (
        GPU.objects.filter(node__cluster=cluster)
        .order_by()
        .values("model", "vendor", "source")
        .annotate(**aggregates)
    )
    return [dict(row) for row in rows]


def model_rows(
    *, cluster: Cluster, now: dt.datetime, groups: list[dict[str, Any]] | None = None
) -> list[ModelRow]:
    """The cluster's GPU models, most GPUs first: `groups` (`model_groups`, read here when
    not given) merged under each model's one name (`Cluster.model_of`)."""
    grouped = model_groups(cluster=cluster, now=now) if groups is None else groups
    merged: dict[str, dict[str, Any]] = {}
    for each in grouped:
        row: dict[str, Any] = dict(each)  # the aggregates' keys are made above
        model = cluster.model_of(row["model"])
        into = merged.setdefault(
            model,
            {
                "vendor": vendor_of(row["vendor"], model),
                "sources": [],
                "n": 0,
                "fresh": 0,
                **{f"{k}__n": 0 for k, *_ in COLUMNS},
                **{f"{k}__v": None for k, *_ in COLUMNS},
            },
        )
        into["n"] += row["n"]
        into["fresh"] += row["fresh"]
        if row["fresh"]:
            words = source_words(row["source"], into["vendor"] or row["vendor"])
            if words not in into["sources"]:
                into["sources"].append(words)
        for key, _label, _unit, how, _digits in COLUMNS:
            into[f"{key}__n"] += row[f"{key}__n"]
            value, before = row[f"{key}__v"], into[f"{key}__v"]
            if value is None:
                continue
            if before is None:
                into[f"{key}__v"] = value
            else:
                into[f"{key}__v"] = before + value if how == "mean" else max(before, value)
    out = []
    for model, into in merged.items():
        source = _(" and ").join(into["sources"]) or source_words("", into["vendor"])
        line = ModelRow(
            model=model,
            vendor=into["vendor"],
            gpus=into["n"],
            reporting=into["fresh"],
            source=source,
            peak_tflops=cluster.peak_for(model),
        )
        for key, _label, _unit, how, digits in COLUMNS:
            n, total = into[f"{key}__n"], into[f"{key}__v"]
            if n and total is not None:
                value = total / n if how == "mean" else total
                line.cells.append(Cell(key, value, digits))
            else:
                gap = _("not reported by %(source)s") % {"source": source} if into["fresh"] else ""
                line.cells.append(Cell(key, None, digits, gap))
        out.append(line)
    out.sort(key=lambda r: (-r.gpus, r.model))
    return out
