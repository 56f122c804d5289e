"""What KUAE asks a cluster's Prometheus (docs/integrations.md) and how it reads the answer: pure,
no database, no network.

One instant query per pull, whatever the cluster's size or vendors: the series of every
exporter's mapping file (dcgm-exporter, AMD, Gaudi) that the checks of the pull read, for
every GPU the server knows, reduced to the labels KUAE files a value under (and the GPU's
identity on one series per exporter only). The cluster's nodes are picked out of the
answer here, by their `Hostname` (or `hostname`) label, not in PromQL: a regex of 1,000
hostnames is a slow query and a long request, while a Prometheus that scrapes several
clusters only sends a few more series. The answer's size is bounded where it is read
(`KUAE_PROMETHEUS_MAX_BYTES`).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Container, Iterable, Mapping, Sequence
from typing import Any

from apps.telemetry.exporters import (
    Exporter,
    GpuValues,
    chart_lines,
    exporters,
    gpu_samples,
    identity_labels,
    index_labels,
    select_labels,
    selected,
    series_for,
    series_index,
)
from apps.telemetry.intake import TelemetrySample
from apps.telemetry.names import DCGM_NOT_SUPPORTED
from apps.telemetry.pcibus import pci_bus_or_blank

HOST_LABELS = ("Hostname", "hostname")
# The labels a value is filed under: the series, the host and the GPU (each exporter's index
# label: dcgm-exporter's `gpu`, AMD's `gpu_id`, Gaudi's `id`).
# And the labels a mapping line selects on (AMD's `clock_type`): kept apart by `max by`.
VALUE_LABELS = ("__name__", *HOST_LABELS, *index_labels(), *select_labels())
# What names the GPU besides, asked of one series per exporter only: the same on every series
# of a GPU, and as long again as the rest of a series in the answer.
IDENTITY_SERIES = {"dcgm": "DCGM_FI_DEV_GPU_TEMP", "amd": "gpu_power_usage",
                   "gaudi": "habanalabs_utilization"}  # fmt: skip
IDENTITY_FIELD = IDENTITY_SERIES["dcgm"]
IDENTITY_LABELS = tuple(dict.fromkeys(label for e in exporters() for label in e.identity if label))


class AnswerError(ValueError):
    """The server answered, but not with an instant vector: the message says what."""


def _spellings(series: str) -> list[str]:
    """`series` and, where its exporter lets a site prefix names (AMD's `amd_`), that spelling."""
    prefixes = {line.exporter for line in series_index().get(series, ())}
    out = [series]
    for e in exporters():
        if e.prefix and e.name in prefixes:
            out.append(e.prefix + series)
    return out


def all_series() -> list[str]:
    """Every series of every mapping file."""
    return list(series_for(frozenset(line.name for e in exporters() for line in e.lines)))


def dcgm_query(
    fields: Iterable[str] | None = None, *, identity: bool = True, matcher: str = ""
) -> str:
    """The one instant query of a pull: the latest value of each of `fields` (series of any
    exporter; None: every one) per GPU.

    `max by` keeps one series per (series, host, GPU) even when two scrape jobs or an HA pair
    of exporters report the same GPU, and drops labels KUAE does not read (instance, driver
    version …). With `identity`, one series per exporter (added when not among `fields`:
    dcgm-exporter's temperature, AMD's power, Gaudi's utilisation) also carries the GPU's
    identity labels (UUID, model, PCI address), which the other series leave out: the
    answer is about half as long as with every label on every series. Still one query
    whatever the vendors: the series of every exporter are one regex. `matcher` (PromQL,
    `label=~"…"`) narrows every selector."""
    extra = f",{matcher}" if matcher else ""
    names: dict[str, None] = {}
    for field in all_series() if fields is None else fields:
        names.update(dict.fromkeys(_spellings(field)))
    parts = []
    if identity:
        ids: list[str] = []
        for series in IDENTITY_SERIES.values():
            if fields is None or series in names or series == IDENTITY_FIELD:
                spelled = _spellings(series)
                ids += spelled
                for each in spelled:
                    names.pop(each, None)
        by = ", ".join((*VALUE_LABELS, *IDENTITY_LABELS))
        selector = f'__name__="{ids[0]}"' if len(ids) == 1 else f'__name__=~"{"|".join(ids)}"'
        parts.append(f"max by ({by}) ({{{selector}{extra}}})")
    if names:
        pattern = "|".join(sorted(names))
        parts.append(f'max by ({", ".join(VALUE_LABELS)}) ({{__name__=~"{pattern}"{extra}}})')
    return " or ".join(parts)


def _result(answer: Any, kind: str) -> list[Any]:
    """The result list of a successful answer of `kind` (vector or matrix)."""
    if not isinstance(answer, dict):
        raise AnswerError("the answer is not a JSON object")
    if answer.get("status") != "success":
        said = str(answer.get("error") or answer.get("status") or "no status")[:300]
        raise AnswerError(f"the query failed: {said}")
    data = answer.get("data")
    if not isinstance(data, dict) or data.get("resultType") != kind:
        what = "an instant vector" if kind == "vector" else "a range matrix"
        raise AnswerError(f"the answer is not {what}")
    result = data.get("result")
    if not isinstance(result, list):
        raise AnswerError("the answer has no result list")
    return result


def vector_of(answer: Any) -> list[tuple[dict[str, str], float]]:
    """The (labels, value) pairs of an instant query's JSON answer; AnswerError when it is
    not a successful vector (the server's own error message is named)."""
    out = []
    for item in _result(answer, "vector"):
        # The shape Prometheus answers, checked by trying it (a pull reads 10⁶ of these):
        # {"metric": {label: value}, "value": [time, "number"]}; anything else is skipped.
        try:
            labels, (_, number) = item["metric"], item["value"]
            value = float(number)
        except (TypeError, KeyError, ValueError):
            continue
        if type(labels) is dict and type(number) is str:
            out.append((labels, value))
    return out


def host_index(hostnames: Iterable[str]) -> dict[str, str]:
    """label value → node hostname: each hostname, and its short name (before the first
    dot) when no other node shares it, so `gpu-a017` and `gpu-a017.dc1.example` both find
    the node whichever of the two the exporter reports."""
    names = list(hostnames)
    out = {h: h for h in names}
    shorts: dict[str, list[str]] = {}
    for h in names:
        shorts.setdefault(h.split(".", 1)[0], []).append(h)
    for short, owners in shorts.items():
        if len(owners) == 1:
            out.setdefault(short, owners[0])
    return out


def _host(labels: Mapping[str, str], hosts: Mapping[str, str]) -> str | None:
    for key in HOST_LABELS:
        value = labels.get(key)
        if value and type(value) is str:
            return hosts.get(value) or hosts.get(value.split(".", 1)[0])
    return None


def samples_of(
    vector: Iterable[tuple[Mapping[str, str], float]],
    *,
    hosts: Mapping[str, str],
    known: Container[tuple[str, int]],
    ts: dt.datetime,
) -> list[TelemetrySample]:
    """One sample per GPU of the cluster, named as posted telemetry names it (the exporters'
    mapping files, apps.telemetry.exporters): the series of hosts not in `hosts` (label →
    hostname), of GPUs not in `known` (hostname, index), series no file names, and dcgm's
    "not supported" sentinels or NaN are left out."""
    index = series_index()
    identities = identity_labels()
    values: dict[tuple[str, int], GpuValues] = {}
    identity: dict[tuple[str, int], tuple[str, str, str]] = {}
    # A GPU's series share its host and index labels: each is looked up once (None: not
    # one of the cluster's GPUs).
    gpus: dict[tuple[object, ...], tuple[str, int] | None] = {}
    for labels, value in vector:
        field = labels.get("__name__")
        lines = index.get(field) if type(field) is str else None
        if lines is None or not math.isfinite(value) or value >= DCGM_NOT_SUPPORTED:
            continue
        lines = selected(lines, labels)
        for line in lines:
            label = line.index_label
            seen = (labels.get("Hostname"), labels.get("hostname"), label, labels.get(label))
            try:
                key = gpus[seen]
            except KeyError:
                key = gpus[seen] = _gpu_key(labels, label, hosts, known)
            except TypeError:  # a label that is a list or an object: no GPU of ours
                continue
            if key is None:
                continue
            gpu = values.get(key)
            if gpu is None:
                gpu = values[key] = GpuValues()
            gpu.add(line, value)
            uuid_label, model_label, bus_label = identities[line.exporter]
            if uuid_label in labels or model_label in labels or bus_label in labels:
                bus = pci_bus_or_blank(labels.get(bus_label)) if bus_label else ""
                # As long as the GPU's columns hold (a label may be anything a server sends).
                uuid, model = (
                    str(labels.get(k, ""))[:64] if k else "" for k in (uuid_label, model_label)
                )
                identity[key] = (uuid, model, bus)
    return gpu_samples(values, identity, ts)


def _gpu_key(
    labels: Mapping[str, str],
    index_label: str,
    hosts: Mapping[str, str],
    known: Container[tuple[str, int]],
) -> tuple[str, int] | None:
    """(hostname, index) of the series' GPU when it is one of `known`, else None."""
    host, gpu = _host(labels, hosts), labels.get(index_label)
    if host is None or type(gpu) is not str or not gpu.isdigit():
        return None
    key = (host, int(gpu))
    return key if key in known else None


# Charts over a range (docs/integrations.md, 2d. Prometheus): at most this many points per series,
# with a step no finer than a usual scrape interval and always one of these round values.
MAX_POINTS = 2000
STEPS_S = (15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)


def range_step(start: dt.datetime, end: dt.datetime, *, max_points: int = MAX_POINTS) -> int:
    """The step in seconds of a range query from `start` to `end`: the finest round step
    that keeps each series at `max_points` points or fewer (1 h → 15 s, 24 h → 60 s,
    30 d → 1800 s)."""
    span = max(0.0, (end - start).total_seconds())
    need = span / max(1, max_points - 1)
    for step in STEPS_S:
        if step >= need:
            return step
    return math.ceil(need / 86400) * 86400


def _regex_literal(text: str) -> str:
    """`text` matched literally by an RE2 regex: its metacharacters escaped (a hyphen, not
    outside a class is no metacharacter and is left alone)."""
    return _REGEX_META.sub(r"\\\g<0>", text)


_REGEX_META = re.compile(r"[.\\+*?()|\[\]{}^$]")


def _host_pattern(hostname: str) -> str:
    """A PromQL regex (inside a double-quoted string) matching the node's host label as
    `host_index` does: the hostname itself, or its short name, or the short name with a
    domain when the node is registered by its short name."""
    short = hostname.split(".", 1)[0]
    alternatives = [_regex_literal(hostname)]
    if short != hostname:
        alternatives.append(_regex_literal(short))
    else:
        alternatives.append(_regex_literal(short) + r"\..+")
    pattern = "|".join(alternatives)
    return pattern.replace("\\", "\\\\").replace('"', '\\"')


def _quoted(pattern: str) -> str:
    """A regex written inside a PromQL double-quoted string."""
    return pattern.replace("\\", "\\\\").replace('"', '\\"')


def _per_gpu(names: Sequence[str], matchers: Sequence[str], index_label: str, hostname: str) -> str:
    """`max by (index_label)` of the series spelled `names` on the node, one part per host
    label, with `matchers` (label selectors, already PromQL) besides."""
    pattern = _host_pattern(hostname)
    parts = []
    for label in HOST_LABELS:
        inner = [*matchers, f'{label}=~"{pattern}"']
        if len(names) == 1:
            selector = f"{names[0]}{{{','.join(inner)}}}"
        else:
            selector = f'{{__name__=~"{"|".join(names)}",{",".join(inner)}}}'
        parts.append(f"max by ({index_label}) ({selector})")
    return " or ".join(parts)


def _scaled(query: str, scale: float) -> str:
    """`query` times `scale`, written as a division where the factor is 1/n (mW → W: /
    1000; bytes → MiB: / 1048576)."""
    if scale == 1:
        return query
    inverse = 1 / scale
    if inverse.is_integer():
        return f"({query}) / {int(inverse)}"
    return f"({query}) * {scale!r}"


def exporter_range_query(made: Exporter, name: str, hostname: str) -> str | None:
    """One node's per-GPU series of KUAE's `name` as exporter `made` publishes it (its
    mapping file's lines, `exporters.chart_lines`), in KUAE's unit: one query, each line's
    series `max by` its index label and scaled, a `fallback` line's only for the GPUs no
    `value` line gave (PromQL's `or`). None when the file cannot fill `name`."""
    parts = []
    for line in chart_lines(made, name):
        names = [line.series] + ([made.prefix + line.series] if made.prefix else [])
        matchers = [
            f'{label}=~"{_quoted("|".join(_regex_literal(v) for v in sorted(values)))}"'
            for label, values in line.select
        ]
        parts.append(_scaled(_per_gpu(names, matchers, line.index_label, hostname), line.scale))
    return " or ".join(parts) if parts else None


def port_range_query(series: str, names: Sequence[str], *, rate_s: int | None) -> str:
    """One node's per-port series of one node_exporter `node_infiniband_*` name: node_exporter
    carries no host label, so the node is its `instance` label without the port, matched to
    its hostname (or short name) or one of `names`' other entries (its addresses); one series
    per (`device`, `port`), its `rate()` over `rate_s` seconds for a counter (`max by` also
    merges two scrapes of the same port)."""
    hostname, *others = names
    pattern = "|".join([_host_pattern(hostname), *(_quoted(_regex_literal(a)) for a in others)])
    selector = f'{series}{{instance=~"({pattern})(:[0-9]+)?"}}'
    if rate_s is not None:
        selector = f"rate({selector}[{rate_s}s])"
    return f"max by (device, port) ({selector})"


def matrix_of(answer: Any) -> list[tuple[dict[str, str], list[tuple[float, float]]]]:
    """The (labels, [(epoch s, value)]) series of a range query's JSON answer; AnswerError
    when it is not a successful matrix. NaN, infinities and dcgm's "not supported"
    sentinels are left out of each series (a gap in the chart)."""
    out = []
    for item in _result(answer, "matrix"):
        if not isinstance(item, dict):
            continue
        labels, values = item.get("metric"), item.get("values")
        if not isinstance(labels, dict) or not isinstance(values, list):
            continue
        points = []
        for pair in values:
            if not isinstance(pair, list) or len(pair) != 2:
                continue
            try:
                ts, value = float(pair[0]), float(pair[1])
            except (TypeError, ValueError):
                continue
            if math.isfinite(value) and value < DCGM_NOT_SUPPORTED:
                points.append((ts, value))
        out.append(({str(k): str(v) for k, v in labels.items()}, points))
    return out


# --- the thresholds pushed into PromQL (docs/integrations.md, 2d: thresholds in the query) ---

# What a present value is: below dcgm's "not supported" sentinel (NaN compares false too).
_PRESENT = f"< {DCGM_NOT_SUPPORTED}"


def _by_index_label(fields: Iterable[str]) -> dict[str, list[str]]:
    """Each index label → the spellings of those of `fields` (series) its exporter files
    under it."""
    out: dict[str, dict[str, None]] = {}
    index = series_index()
    for field in fields:
        for line in index.get(field, ()):
            out.setdefault(line.index_label, {}).update(dict.fromkeys(_spellings(field)))
    return {label: sorted(names) for label, names in out.items()}


def _names(names: Sequence[str]) -> str:
    return f'__name__="{names[0]}"' if len(names) == 1 else f'__name__=~"{"|".join(names)}"'


def presence_query(fields: Iterable[str], indexes: Iterable[int]) -> str:
    """One series per node (per host label spelling): how many distinct GPUs, of the index
    numbers `indexes`, have a present value (not NaN, not dcgm's "not supported") of any of
    `fields` (series). What marks a node's GPUs as reporting without reading them."""
    pattern = "|".join(str(i) for i in sorted(set(indexes))) or "none"
    parts = [
        f'{{{_names(names)},{label}=~"{pattern}"}} {_PRESENT}'
        for label, names in _by_index_label(fields).items()
    ]
    per_gpu = ", ".join((*HOST_LABELS, *index_labels()))
    return f"count by ({', '.join(HOST_LABELS)}) (max by ({per_gpu}) ({' or '.join(parts)}))"


def offenders_query(fields: Iterable[str], over: Mapping[str, float]) -> str:
    """`dcgm_query(fields)` of only the GPUs with a present value at or over a threshold:
    `over` is KUAE name → its limit; each series of `fields` that fills one of those names
    is compared with the lowest such limit in its own unit (the limit / the line's scale).
    A GPU so picked comes with every series of `fields`, as a whole pull has it; one
    picked by a series that is not the value its name is judged by (AMD's junction
    temperature, a fallback) is read and judged too: more read, never one missed."""
    fields = list(fields)
    index = series_index()
    limits: dict[str, float] = {}
    for field in fields:
        for line in index.get(field, ()):
            if line.name in over and line.scale > 0:
                limit = over[line.name] / line.scale
                for spelled in _spellings(field):
                    limits[spelled] = min(limits.get(spelled, limit), limit)
    by_limit: dict[float, list[str]] = {}
    for name, limit in limits.items():
        by_limit.setdefault(limit, []).append(name)
    per_gpu = ", ".join((*HOST_LABELS, *index_labels()))
    hot = " or ".join(
        f"{{{_names(sorted(names))}}} >= {limit!r} {_PRESENT}"
        for limit, names in sorted(by_limit.items())
    )
    return f"({dcgm_query(fields)}) and on ({per_gpu}) (max by ({per_gpu}) ({hot}))"


def nodes_query(fields: Iterable[str], hostnames: Iterable[str]) -> str:
    """`dcgm_query(fields)` of the GPUs of the nodes `hostnames` only (their host label,
    either spelling, matched as `host_index` matches it): one regex of a few nodes."""
    pattern = "|".join(_host_pattern(h) for h in sorted(set(hostnames)))
    parts = [dcgm_query(fields, matcher=f'{label}=~"{pattern}"') for label in HOST_LABELS]
    return " or ".join(f"({part})" for part in parts)


def node_counts(
    vector: Iterable[tuple[Mapping[str, str], float]], hosts: Mapping[str, str]
) -> dict[str, int | None]:
    """hostname → the GPU count `presence_query` answered for it; None for a node answered
    more than once (two host label spellings): its GPUs cannot be told apart by a count."""
    out: dict[str, int | None] = {}
    for labels, value in vector:
        host = _host(labels, hosts)
        if host is None or not math.isfinite(value):
            continue
        out[host] = None if host in out else int(value)
    return out
