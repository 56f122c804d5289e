"""The fleet view of GPUs (docs/integrations.md, 2d. Prometheus; issue 15 item 2): across one
cluster, the hottest, the least utilised and the most throttled GPUs, each with its node and the
running jobs on that node.

Values are each GPU's latest: from the cluster's Prometheus when it names one (one instant
query for the few fields ranked, every GPU of the cluster — not `topk` in PromQL, since a
Prometheus scraping several clusters would rank the other clusters' GPUs too; the answer is
bounded by KUAE_PROMETHEUS_MAX_BYTES), else from the telemetry posted to KUAE (`GPU.metrics`,
those updated in the last FRESH).

"Throttled" here: a busy GPU (utilisation ≥ BUSY_UTIL) whose SM clock is at least
CLOCK_SHORTFALL below the highest SM clock reported among the cluster's GPUs of its own
model (a blank model is the cluster's `gpu_model`, docs/pages.md, Vendors and models: an
H100 at its normal clock is not slow beside an MI300X's higher one), or any GPU whose
exporter reports a clock-throttle reason that slows it (DCGM_FI_DEV_CLOCK_THROTTLE_
REASONS / CLOCKS_EVENT_REASONS: power cap, hardware slowdown, thermal, power brake). An idle
GPU's low clock is power saving, not throttling. Ranked by clock shortfall, largest first.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import connection
from django.db.models import BigIntegerField, Case, F, FloatField, Q, Value, When
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Coalesce, Collate, NullIf
from django.utils.translation import gettext_lazy

from apps.fleet.gpu_models import canonical_model
from apps.fleet.models import GPU, Cluster, Node
from apps.jobs.models import Job
from apps.reports.gpu_models import FRESH, model_groups
from apps.telemetry.exporters import series_for
from apps.telemetry.prometheus_source import SourceDown, prometheus_latest

TOP = 10
BUSY_UTIL = 50.0
CLOCK_SHORTFALL = 0.10
# The values ranked and shown, by KUAE's names: from a Prometheus, the series of every
# exporter that fills them (dcgm-exporter's, AMD's, Gaudi's: `exporters.series_for`).
RANKED_METRICS = frozenset(
    {"temp_c", "gpu_util", "sm_clock_mhz", "power_w", "tensor_active", "sm_clock_throttle"}
)
# The throttle-reason bits that slow a GPU down (NVML's clocks event reasons); idle (0x1)
# and application-clock settings (0x2) are left out, as is sync boost (0x10).
SLOWDOWN_REASONS = {
    0x4: gettext_lazy("power cap"),
    0x8: gettext_lazy("hardware slowdown"),
    0x20: gettext_lazy("software thermal"),
    0x40: gettext_lazy("hardware thermal"),
    0x80: gettext_lazy("power brake"),
}


@dataclass(frozen=True)
class GPUValues:
    """One GPU's latest values, as posted telemetry names them."""

    hostname: str
    index: int
    metrics: Mapping[str, float]
    # Its model as `Cluster.model_of` reads it (the clocks are compared within one).
    model: str = ""


def reasons_of(bitmask: float | None) -> list[str]:
    """The slowdown reasons a throttle-reasons bitmask names, in words."""
    if bitmask is None:
        return []
    bits = int(bitmask)
    return [str(words) for bit, words in SLOWDOWN_REASONS.items() if bits & bit]


@dataclass(frozen=True)
class Ranked:
    """A GPU in one of the lists: its values, its clock shortfall against the highest SM
    clock of its model in the cluster (0.25 = 25 % below), its throttle reasons."""

    gpu: GPUValues
    shortfall: float | None
    reasons: list[str]

    def value(self, key: str) -> float | None:
        """The GPU's latest `key` (temp_c, gpu_util …), None when not reported."""
        return self.gpu.metrics.get(key)


@dataclass
class Rankings:
    """The three lists and what they were ranked from."""

    hottest: list[Ranked] = field(default_factory=list)
    least_utilised: list[Ranked] = field(default_factory=list)
    throttled: list[Ranked] = field(default_factory=list)
    # model → the highest SM clock reported among the cluster's GPUs of that model (MHz), by
    # model name; a model none of whose GPUs reported a clock is not in it.
    max_clocks: dict[str, float] = field(default_factory=dict)
    counted: int = 0


def highest_clocks(gpus: Iterable[GPUValues]) -> dict[str, float]:
    """model → the highest SM clock among `gpus` of that model (a zero clock is no
    reading), by model name."""
    out: dict[str, float] = {}
    for g in gpus:
        clock = g.metrics.get("sm_clock_mhz")
        if clock and clock > out.get(g.model, 0):
            out[g.model] = clock
    return dict(sorted(out.items()))


def rank_gpus(
    gpus: Iterable[GPUValues],
    *,
    top: int = TOP,
    max_clocks: Mapping[str, float] | None = None,
    counted: int | None = None,
) -> Rankings:
    """Rank GPUs: hottest (temperature, highest first), least utilised (utilisation, lowest
    first) and throttled (see the module's docstring: each GPU's clock against the highest
    of its own model), `top` of each; ties by host and GPU. `max_clocks` (model → MHz) and
    `counted` are the fleet's when `gpus` are only the candidates for the lists (else taken
    from `gpus`)."""
    rows = list(gpus)
    clocks = highest_clocks(rows) if max_clocks is None else dict(sorted(max_clocks.items()))

    def ranked(g: GPUValues) -> Ranked:
        clock = g.metrics.get("sm_clock_mhz")
        highest = clocks.get(g.model)
        shortfall = 1 - clock / highest if clock is not None and highest else None
        return Ranked(g, shortfall, reasons_of(g.metrics.get("sm_clock_throttle")))

    def name(g: GPUValues) -> tuple[str, int]:
        return (g.hostname, g.index)

    hot = sorted(
        (g for g in rows if g.metrics.get("temp_c") is not None),
        key=lambda g: (-g.metrics["temp_c"], name(g)),
    )
    idle = sorted(
        (g for g in rows if g.metrics.get("gpu_util") is not None),
        key=lambda g: (g.metrics["gpu_util"], name(g)),
    )
    throttled = []
    for g in rows:
        r = ranked(g)
        busy = (g.metrics.get("gpu_util") or 0) >= BUSY_UTIL
        slow = r.shortfall is not None and r.shortfall >= CLOCK_SHORTFALL
        if (busy and slow) or r.reasons:
            throttled.append(r)
    throttled.sort(key=lambda r: (-(r.shortfall or 0), name(r.gpu)))
    return Rankings(
        hottest=[ranked(g) for g in hot[:top]],
        least_utilised=[ranked(g) for g in idle[:top]],
        throttled=throttled[:top],
        max_clocks=clocks,
        counted=len(rows) if counted is None else counted,
    )


@dataclass(frozen=True)
class JobRef:
    """A running job on a listed GPU's node (jobs hold nodes, not single GPUs)."""

    id: int
    name: str


@dataclass
class GPUFleet:
    """The fleet view of a cluster: rankings, the source, its error, nodes and their jobs."""

    cluster: Cluster
    source: str  # "prometheus" or "posted"
    rankings: Rankings
    error: str = ""
    nodes: dict[str, Node] = field(default_factory=dict)
    jobs: dict[str, list[JobRef]] = field(default_factory=dict)
    # the model groups the posted values were ranked with (`model_groups`; None from a
    # Prometheus): the page's models card reads them too
    groups: list[dict[str, Any]] | None = None


def _posted(cluster: Cluster, now: dt.datetime, top: int, groups: list[dict[str, Any]]) -> Rankings:
    """The posted values (fresh within FRESH) ranked in the database: the count and the
    highest SM clock of each model from the page's model groups (`model_groups`: the pass
    over every GPU that the models card reads too), then each list's `top` by the same keys
    as `rank_gpus` (names compared bytewise, as Python does; the shortfall against the GPU's
    model's highest, one `When` per model), which ranks those candidates again — so a
    100,000-GPU cluster sends a few dozen GPUs' documents, not all of them."""
    fresh = GPU.objects.filter(node__cluster=cluster, updated_at__gte=now - FRESH).annotate(
        temp=_number("temp_c"),
        util=_number("gpu_util"),
        clock=_number("sm_clock_mhz"),
        throttle=_number("sm_clock_throttle"),
        # Cluster.model_of in SQL: a blank model is the cluster's (the names stored are
        # mapped to the model's one name below: a row per name, not per GPU)
        kind=Coalesce(NullIf("model", Value("")), Value(cluster.model_of(""))),
    )
    # Each name stored → the model's one name (docs/pages.md, One name per model): "H100"
    # and "NVIDIA H100 80GB HBM3" are one model, with one highest clock (a zero clock is no
    # reading).
    counted = 0
    max_clocks: dict[str, float] = {}
    names: dict[str, str] = {}
    for group in groups:
        model = cluster.model_of(group["model"])
        names[group["model"] or cluster.model_of("")] = model
        counted += group["fresh"]
        highest = group["sm_clock_mhz__v"]
        if highest and highest > max_clocks.get(model, 0):
            max_clocks[model] = float(highest)
    host = Collate("node__hostname", "C" if connection.vendor == "postgresql" else "BINARY")
    slowdown = Cast("throttle", BigIntegerField()).bitand(sum(SLOWDOWN_REASONS))
    throttled = Q(throttle__isnull=False) & ~Q(reasons=0)
    shortfall: Any = Value(0.0)
    if max_clocks:
        below = [
            When(kind=kind, then=Value(1.0) - F("clock") / Value(max_clocks[model]))
            for kind, model in names.items()
            if model in max_clocks
        ]
        shortfall = Coalesce(Case(*below, default=None, output_field=FloatField()), Value(0.0))
        busy = Q(util__gte=BUSY_UTIL, clock__isnull=False, shortfall__gte=CLOCK_SHORTFALL)
        throttled |= busy
    candidates = fresh.annotate(host=host, reasons=slowdown, shortfall=shortfall)
    lists = (
        candidates.filter(temp__isnull=False).order_by("-temp", "host", "index"),
        candidates.filter(util__isnull=False).order_by("util", "host", "index"),
        candidates.filter(throttled).order_by("-shortfall", "host", "index"),
    )
    found: dict[tuple[str, int], GPUValues] = {}
    for listed in lists:
        rows = listed.values_list("node__hostname", "index", "metrics", "kind")[:top]
        for hostname, index, metrics, kind in rows:
            found[(hostname, index)] = GPUValues(
                hostname, index, metrics or {}, names.get(kind) or canonical_model(kind)
            )
    return rank_gpus(found.values(), top=top, max_clocks=max_clocks, counted=counted)


def _number(key: str) -> Cast:
    """A GPU's latest `key` as a number in SQL (the intake keeps numbers only)."""
    return Cast(KT(f"metrics__{key}"), FloatField())


def gpu_fleet(*, cluster: Cluster, now: dt.datetime, top: int = TOP) -> GPUFleet:
    """The cluster's GPU rankings with the nodes and running jobs of the GPUs listed. A
    Prometheus that does not answer gives empty lists and the error naming it."""
    source = "prometheus" if cluster.prometheus_url else "posted"
    error = ""
    rankings = Rankings()
    groups = None
    if cluster.prometheus_url:
        try:
            samples = prometheus_latest(cluster, fields=series_for(RANKED_METRICS), now=now)
        except SourceDown as exc:
            error = str(exc)
        else:
            # Each sample's model: its exporter's, else the stored GPU's (prometheus_latest).
            rankings = rank_gpus(
                (GPUValues(s.node, s.gpu, s.metrics, cluster.model_of(s.model)) for s in samples),
                top=top,
            )
    else:
        groups = model_groups(cluster=cluster, now=now)
        rankings = _posted(cluster, now, top, groups)
    fleet = GPUFleet(cluster=cluster, source=source, rankings=rankings, error=error, groups=groups)
    listed = {
        r.gpu.hostname
        for rows in (rankings.hottest, rankings.least_utilised, rankings.throttled)
        for r in rows
    }
    if listed:
        fleet.nodes = {
            n.hostname: n for n in Node.objects.filter(cluster=cluster, hostname__in=listed)
        }
        running = (
            Job.nodes.through.objects.filter(node__hostname__in=listed, job__status="running")
            .order_by("-job__gpu_count", "job_id")
            .values_list("node__hostname", "job_id", "job__name")
        )
        for host, job_id, name in running:
            fleet.jobs.setdefault(host, []).append(JobRef(job_id, name))
    return fleet
