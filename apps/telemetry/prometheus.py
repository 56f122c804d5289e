"""GPU exporters' `/metrics` text (dcgm-exporter, AMD, Gaudi: apps.telemetry.exporters) → telemetry
samples, node_exporter's InfiniBand series in it → NIC ports' readings, and its host series
(EDAC, filesystems, the clock: apps.telemetry.host_series) → host readings.

Series names and label sets are parsed by prometheus_client's parser. A scrape repeats
each GPU's label set on every one of its ~26 metrics, so each distinct label set is parsed
once per text and reused; this file only splits a sample line into series and value.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterator

from prometheus_client.parser import text_string_to_metric_families

from apps.common.hostnames import hostname_key
from apps.common.limits import METRIC_NAMES_PER_GPU
from apps.telemetry.exporters import (
    GpuValues,
    gpu_index,
    gpu_samples,
    identity_labels,
    selected,
    series_index,
)
from apps.telemetry.host import HostReadingIn
from apps.telemetry.host_kinds import Source
from apps.telemetry.host_series import HostSeries
from apps.telemetry.infiniband import PREFIX as INFINIBAND
from apps.telemetry.infiniband import InfinibandPorts, NoHostError
from apps.telemetry.intake import TelemetrySample
from apps.telemetry.names import DCGM_NOT_SUPPORTED
from apps.telemetry.pcibus import pci_bus_or_blank
from apps.telemetry.ports import PortReading

HOST_LABELS = ("Hostname", "hostname")
_CACHED = 4096  # distinct series names, and label sets, remembered per text


class ExpositionError(ValueError):
    """Text that is not Prometheus exposition format; `line` is 1-based."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


def _library_parse(series: str) -> tuple[str, dict[str, str]]:
    """Name and labels of `series` (`name{labels}`) by prometheus_client's parser."""
    families = list(text_string_to_metric_families(f"{series} 0\n"))
    sample = families[0].samples[0]
    return sample.name, dict(sample.labels)


def parse_lines(text: str) -> Iterator[tuple[int, str, dict[str, str], float]]:
    """(line number, name, labels, value) for each sample line, one at a time (a caller past
    a bound stops reading); ExpositionError names a bad line."""
    names: dict[str, str] = {}
    label_sets: dict[str, dict[str, str]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        brace = line.find("{")
        try:
            if brace >= 0:
                close = line.rfind("}")
                if close < brace:
                    raise ValueError("unclosed label set")
                name, label_text, rest = line[:brace], line[brace : close + 1], line[close + 1 :]
            else:
                name, _, rest = line.replace("\t", " ").partition(" ")
                label_text = ""
            fields = rest.split()
            if not fields or len(fields) > 2:
                raise ValueError("expected a value (and an optional timestamp) after the series")
            value = float(fields[0])
            series = names.get(name)
            if series is None:
                series = _library_parse(name)[0]
            labels = label_sets.get(label_text)
            if labels is None:
                labels = _library_parse(f"{name}{label_text}")[1]
        except (ValueError, IndexError, KeyError) as exc:
            raise ExpositionError(number, str(exc) or "not a sample line") from exc
        # Cached while few: a text of a million distinct series must not fill memory.
        if len(names) < _CACHED:
            names[name] = series
        if len(label_sets) < _CACHED:
            label_sets[label_text] = labels
        yield number, series, labels, value


def parse_exposition(
    text: str, *, ts: dt.datetime, node: str | None = None
) -> tuple[list[TelemetrySample], list[PortReading], list[HostReadingIn]]:
    """parse_dcgm's samples, a reading per NIC port of node_exporter's `node_infiniband_*`
    series, and a host reading per (kind, subject) of its host series (source
    `node_exporter`), the last two filed under `node` (NoHostError when there are any and no
    `node`), in one pass; ExpositionError names a bad line, and the series of a bad value."""
    node = hostname_key(node) if node else node
    ports = InfinibandPorts()
    host = HostSeries()
    samples = _samples(_diverting(parse_lines(text), ports, host), ts=ts, node=node)
    readings = ports.readings(node=node, ts=ts)
    if host and not node:
        raise NoHostError("node_exporter's host series carry no host label: give ?node=HOST")
    host_readings = host.readings(node=node, ts=ts, source=Source.NODE_EXPORTER) if node else []
    return samples, readings, host_readings


def _diverting(
    lines: Iterator[tuple[int, str, dict[str, str], float]],
    ports: InfinibandPorts,
    host: HostSeries,
) -> Iterator[tuple[int, str, dict[str, str], float]]:
    """`lines` less node_exporter's InfiniBand ones, which go to `ports`, and its host
    series, which go to `host`."""
    for number, name, labels, value in lines:
        try:
            if name.startswith(INFINIBAND):
                ports.add(name, labels, value)
                continue
            if name.startswith("node_") and host.add(name, labels, value):
                continue
        except ValueError as exc:
            raise ExpositionError(number, str(exc)) from exc
        yield number, name, labels, value


def parse_dcgm(text: str, *, ts: dt.datetime, node: str | None = None) -> list[TelemetrySample]:
    """One sample per (host, GPU): KUAE's names for the series of every exporter's mapping
    file (apps.telemetry.exporters: dcgm-exporter, AMD, Gaudi), the raw name for others
    (kept, ignored by checks); "not supported" sentinels and NaN are dropped.

    `node` overrides the host label (pull mode knows whose exporter it scraped; Gaudi's
    exporter has no host label). The GPU's identity labels of its exporter (dcgm-exporter:
    `UUID`, `modelName`, `pci_bus_id`) are kept (the PCI address in one spelling).
    """
    return _samples(parse_lines(text), ts=ts, node=hostname_key(node) if node else node)


def _samples(
    lines: Iterator[tuple[int, str, dict[str, str], float]], *, ts: dt.datetime, node: str | None
) -> list[TelemetrySample]:
    index = series_index()
    identities = identity_labels()
    gpus: dict[tuple[str, int], GpuValues] = {}
    identity: dict[tuple[str, int], tuple[str, str, str]] = {}
    for number, name, labels, value in lines:
        host = node or next((labels[k] for k in HOST_LABELS if labels.get(k)), None)
        if host is None:
            continue  # no host to file it under
        host = hostname_key(host)
        if not math.isfinite(value) or value >= DCGM_NOT_SUPPORTED:
            continue
        mapped = index.get(name)
        if mapped is not None:
            mapped = selected(mapped, labels)
            if not mapped:
                continue  # a series of the name that no line reads (another clock type)
        for line in mapped or (None,):
            gpu = gpu_index(line, labels, name)
            if gpu is None:
                continue  # not a per-GPU series
            key = (host, gpu)
            values = gpus.get(key)
            if values is None:
                values = gpus[key] = GpuValues()
            if line is None:
                values.raw(name, value)
            else:
                values.add(line, value)
            if len(values) > METRIC_NAMES_PER_GPU:  # docs/operations.md, Limits
                raise ExpositionError(
                    number,
                    f"GPU {gpu} of {host[:80]} has more than {METRIC_NAMES_PER_GPU} metric "
                    "names: past the bound on metric names per GPU",
                )
            if key not in identity:
                uuid, model, bus = identities[line.exporter] if line else DCGM_IDENTITY
                identity[key] = (
                    # As long as the GPU's columns hold (a label may be any text).
                    labels.get(uuid, "")[:64] if uuid else "",
                    labels.get(model, "")[:64] if model else "",
                    pci_bus_or_blank(labels.get(bus)) if bus else "",
                )
    return gpu_samples(gpus, identity, ts)


DCGM_IDENTITY = ("UUID", "modelName", "pci_bus_id")  # an unmapped series' GPU, as before
