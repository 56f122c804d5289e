"""dcgm-exporter's `/metrics` text → telemetry samples, parsed with prometheus_client."""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict

from prometheus_client.parser import text_string_to_metric_families

from apps.fleet.intake import TelemetrySample
from apps.fleet.telemetry import DCGM_FIELDS, DCGM_NOT_SUPPORTED

HOST_LABELS = ("Hostname", "hostname")


class ExpositionError(ValueError):
    """Text that is not Prometheus exposition format; `line` is 1-based."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


def parse_dcgm(text: str, *, ts: dt.datetime, node: str | None = None) -> list[TelemetrySample]:
    """One sample per (host, GPU): contract names for known DCGM fields, the raw name for
    others (kept, ignored by checks); "not supported" sentinels and NaN are dropped.

    `node` overrides the host label (pull mode knows whose exporter it scraped).
    """
    try:
        families = list(text_string_to_metric_families(text))
    except (ValueError, IndexError, KeyError) as exc:
        raise ExpositionError(_bad_line(text), str(exc)) from exc
    values: dict[tuple[str, int], dict[str, float]] = defaultdict(dict)
    identity: dict[tuple[str, int], tuple[str, str]] = {}
    for family in families:
        for sample in family.samples:
            labels = sample.labels
            host = node or next((labels[k] for k in HOST_LABELS if labels.get(k)), None)
            gpu = labels.get("gpu")
            if host is None or gpu is None or not gpu.isdigit():
                continue  # not a per-GPU series (or no host to file it under)
            value = float(sample.value)
            if not math.isfinite(value) or value >= DCGM_NOT_SUPPORTED:
                continue
            key = (host, int(gpu))
            name = sample.name
            if family.type == "counter" and name == family.name + "_total":
                name = family.name  # prometheus_client adds OpenMetrics' _total to counters
            name = DCGM_FIELDS.get(name, name)
            values[key][name] = int(value) if value.is_integer() else value
            identity.setdefault(key, (labels.get("UUID", ""), labels.get("modelName", "")))
    return [
        TelemetrySample(host, gpu, ts, metrics, *identity[(host, gpu)])
        for (host, gpu), metrics in sorted(values.items())
        if metrics
    ]


def _bad_line(text: str) -> int:
    """The first line the parser rejects on its own (only computed when parsing failed)."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        try:
            list(text_string_to_metric_families(line + "\n"))
        except (ValueError, IndexError, KeyError):
            return number
    return 0
