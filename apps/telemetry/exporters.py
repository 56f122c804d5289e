"""Exporters' series → KUAE's telemetry names (docs/integrations.md, Exporters and their
mapping files): pure, no database, no network.

Each exporter is one CSV under `data/exporters/` (dcgm-exporter, AMD's device-metrics-exporter,
Intel Gaudi's metric exporter): per line the series, the label that gives the GPU index, the
canonical name, the factor to its unit, how the series of one GPU combine, and the vendor
page the line cites. `# key: value` lines above the header name the exporter, its vendor,
the labels that name the GPU (`identity`) and a metric-name prefix a site may set (`prefix`).

How lines of one canonical name combine on one GPU:
- `value`: the series' value (scaled);
- `max`: the largest of such series (AMD: a GPU's system clocks, one per `clock_index`);
- `fallback`: used only when no `value` line of that name gave a value (AMD: the junction
  temperature when no edge temperature is published);
- `sum`: the sum of every such series (AMD: XGMI correctable + uncorrectable);
- `fallback_sum`: the sum of such series, only when no `value` line gave one (AMD: per-block
  ECC counters when no total is published — never both);
- `count_zero`: how many such series read 0 (Gaudi: NIC ports whose status is down).

An optional last column, `select`, reads only the series of a name whose labels match:
`label=value` (`|` between accepted values; several pairs apart by spaces) — AMD's
`gpu_clock` carries every clock of a GPU, told apart by `clock_type`.

A series no file names is kept under its own name, its GPU from the `gpu` label (as before).
"""

from __future__ import annotations

import csv
import datetime as dt
import re
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from apps.fleet.vendors import model_name

if TYPE_CHECKING:  # the intake reads this module's names (through `monitored`): no cycle
    from apps.telemetry.intake import TelemetrySample

DATA = Path(__file__).resolve().parent / "data" / "exporters"
FILES = ("dcgm.csv", "amd.csv", "gaudi.csv")
COMBINES = frozenset({"value", "max", "fallback", "sum", "fallback_sum", "count_zero"})
COLUMNS = ("series", "index_label", "name", "scale", "combine", "source")
SELECT = "select"  # an optional last column: which series of the name the line reads
_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
UNKNOWN_INDEX_LABEL = "gpu"  # an unmapped series' GPU, as before the mapping files


@dataclass(frozen=True)
class Line:
    """One line of a mapping file: `series` of `exporter` → `name` times `scale`."""

    exporter: str
    vendor: str
    series: str
    index_label: str
    name: str
    scale: float
    combine: str
    source: str
    # (label, accepted values) pairs a series must carry for this line to read it; () reads
    # every series of the name (most lines)
    select: tuple[tuple[str, frozenset[str]], ...] = ()

    def selects(self, labels: Mapping[str, object]) -> bool:
        """Whether a series with `labels` is one this line reads (its `select`)."""
        return all(labels.get(label) in values for label, values in self.select)

    @property
    def plain(self) -> bool:
        """A value taken as it is (most lines; the fast path)."""
        return self.combine == "value" and self.scale == 1


@dataclass(frozen=True)
class Exporter:
    """One mapping file: the exporter's display name, vendor, identity labels and lines."""

    slug: str
    name: str
    vendor: str
    identity: tuple[str, str, str]  # labels of (uuid, model, pci bus); '' for none
    prefix: str
    lines: tuple[Line, ...]

    def fields(self) -> dict[str, str]:
        """series → canonical name of its `value`/`sum` lines (first such line per series)."""
        out: dict[str, str] = {}
        for line in self.lines:
            out.setdefault(line.series, line.name)
        return out

    def names(self) -> frozenset[str]:
        """The canonical names this exporter can fill."""
        return _names(self.lines)


@cache
def _names(lines: tuple[Line, ...]) -> frozenset[str]:
    return frozenset(line.name for line in lines)


class MappingError(ValueError):
    """A mapping file that does not follow the format; the message names file and line."""


def _scale(text: str, where: str) -> float:
    try:
        value = float(Fraction(text.strip()))
    except (ValueError, ZeroDivisionError) as exc:
        raise MappingError(f"{where}: scale {text!r} is not a number or a fraction") from exc
    return value


def _select(cells: list[str], where: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """The `select` cell (absent or blank: ()) as (label, accepted values) pairs."""
    out = []
    for part in (cells[0] if cells else "").split():
        label, sep, values = part.partition("=")
        accepted = frozenset(v for v in values.split("|") if v)
        if not sep or not _LABEL.fullmatch(label) or not accepted:
            raise MappingError(f"{where}: select {part!r} is not label=value[|value…]")
        out.append((label, accepted))
    return tuple(out)


def selected(lines: tuple[Line, ...], labels: Mapping[str, object]) -> tuple[Line, ...]:
    """Those of a series' `lines` that read a series with `labels` (all of them unless a
    line has a `select`)."""
    if not any(line.select for line in lines):
        return lines
    return tuple(line for line in lines if line.selects(labels))


@cache
def select_labels() -> tuple[str, ...]:
    """Every label a line selects on, in a stable order (a pull keeps them: `max by`)."""
    seen = dict.fromkeys(label for e in exporters() for ln in e.lines for label, _ in ln.select)
    return tuple(seen)


def load(path: Path) -> Exporter:
    """The exporter described by the CSV at `path`; MappingError names a bad line."""
    meta: dict[str, str] = {}
    rows: list[tuple[int, list[str]]] = []
    with path.open(newline="", encoding="utf-8") as handle:
        for number, raw in enumerate(handle, start=1):
            text = raw.strip()
            if not text:
                continue
            if text.startswith("#"):
                key, sep, value = text[1:].partition(":")
                if sep and key.strip() in {"exporter", "vendor", "identity", "prefix"}:
                    meta[key.strip()] = value.strip()
                continue
            rows.append((number, next(csv.reader([text]))))
    header = tuple(rows[0][1]) if rows else ()
    if header not in (COLUMNS, (*COLUMNS, SELECT)):
        raise MappingError(
            f"{path.name}: the header must be {','.join(COLUMNS)} (and optionally ,{SELECT})"
        )
    if "exporter" not in meta or "vendor" not in meta:
        raise MappingError(f"{path.name}: '# exporter:' and '# vendor:' lines are required")
    identity = dict(part.split("=", 1) for part in meta.get("identity", "").split() if "=" in part)
    lines = []
    for number, cells in rows[1:]:
        where = f"{path.name} line {number}"
        if len(cells) not in (len(COLUMNS), len(header)):  # a line may leave `select` out
            raise MappingError(f"{where}: {len(header)} columns expected")
        series, index_label, name, scale, combine, source = (c.strip() for c in cells[:6])
        if combine not in COMBINES:
            raise MappingError(f"{where}: combine {combine!r} is not one of {sorted(COMBINES)}")
        if not (series and index_label and name):
            raise MappingError(f"{where}: series, index_label and name are required")
        if not source.startswith("https://"):
            raise MappingError(f"{where}: each line cites the vendor's page (https://…)")
        lines.append(
            Line(meta["exporter"], meta["vendor"], series, index_label, name,
                 _scale(scale, where), combine, source, _select(cells[6:], where))
        )  # fmt: skip
    return Exporter(
        slug=path.stem,
        name=meta["exporter"],
        vendor=meta["vendor"],
        identity=(identity.get("uuid", ""), identity.get("model", ""), identity.get("pci_bus", "")),
        prefix=meta.get("prefix", ""),
        lines=tuple(lines),
    )


@cache
def exporters() -> tuple[Exporter, ...]:
    """Every shipped mapping file, read once."""
    return tuple(load(DATA / name) for name in FILES)


@cache
def series_index() -> dict[str, tuple[Line, ...]]:
    """series name (and its prefixed spelling) → its lines, across every exporter."""
    out: dict[str, list[Line]] = {}
    for exporter in exporters():
        for line in exporter.lines:
            out.setdefault(line.series, []).append(line)
            if exporter.prefix:
                out.setdefault(exporter.prefix + line.series, []).append(line)
    return {series: tuple(lines) for series, lines in out.items()}


@cache
def identity_labels() -> dict[str, tuple[str, str, str]]:
    """exporter name → its (uuid, model, pci bus) labels."""
    return {e.name: e.identity for e in exporters()}


def exporter(slug: str) -> Exporter:
    """The exporter of mapping file `slug` (dcgm, amd, gaudi); KeyError when none."""
    for each in exporters():
        if each.slug == slug:
            return each
    raise KeyError(slug)


@cache
def _named() -> dict[str, Exporter]:
    return {e.name: e for e in exporters()}


def exporter_named(name: str) -> Exporter | None:
    """The exporter whose display name (`# exporter:`) is `name`; None when none is."""
    return _named().get(name)


def cannot_report(source: str, names: Iterable[str]) -> str:
    """The display name of the exporter of mapping file `source` (a GPU's `source`: dcgm,
    amd, gaudi) when its file fills none of `names` — it can never report them — else ''
    (it can, or `source` names no exporter: posted JSON, whose sender may report anything)."""
    try:
        made = exporter(source)
    except KeyError:
        return ""
    return "" if made.names().intersection(names) else made.name


# How a chart over a range reads a name (docs/integrations.md, 2d. Prometheus as the
# telemetry source): the series of `value` lines, then of `fallback` lines where no value.
CHARTED = ("value", "max", "fallback")


def chart_lines(made: Exporter, name: str) -> tuple[Line, ...]:
    """The lines of `made` a chart of `name` reads, `value` lines before `fallback` ones;
    empty when its file fills `name` no way a chart can draw (it is not reported)."""
    lines = [line for line in made.lines if line.name == name and line.combine in CHARTED]
    return tuple(sorted(lines, key=lambda line: CHARTED.index(line.combine)))


def exporter_for(source: str, vendor: str) -> Exporter | None:
    """The exporter of a GPU: the mapping file its `source` names, else the one of its
    vendor (`nvidia` → dcgm-exporter, `amd`, `intel`); None when neither names one."""
    for each in exporters():
        if each.slug == source:
            return each
    for each in exporters():
        if vendor and each.vendor == vendor:
            return each
    return None


def index_labels() -> tuple[str, ...]:
    """Every label that gives a GPU index, in a stable order."""
    seen = dict.fromkeys(line.index_label for e in exporters() for line in e.lines)
    seen.setdefault(UNKNOWN_INDEX_LABEL)
    return tuple(seen)


def series_for(names: Container[str]) -> list[str]:
    """The series (of every exporter, as written without a prefix) that fill `names`."""
    out = dict.fromkeys(line.series for e in exporters() for line in e.lines if line.name in names)
    return list(out)


def number(value: float) -> float:
    """`value` as stored: an int when it is whole."""
    return int(value) if value.is_integer() else value


class GpuValues:
    """One GPU's values as its series are read: `add` each, then `metrics()`."""

    __slots__ = ("_fallback", "_sums", "_values", "exporter")

    def __init__(self) -> None:
        self._values: dict[str, float] = {}
        self._fallback: dict[str, float] = {}
        self._sums: dict[str, float] = {}
        self.exporter = ""  # the exporter whose series named this GPU first: its vendor, `source`

    def raw(self, name: str, value: float) -> None:
        """A series no mapping file names: kept under its own name."""
        self._values[name] = value

    def add(self, line: Line, value: float) -> None:
        """`value` of `line`'s series, combined as the line says."""
        if not self.exporter:
            self.exporter = line.exporter
        combine, name = line.combine, line.name
        if combine == "value":
            self._values[name] = value * line.scale
        elif combine == "max":
            have = self._values.get(name)
            scaled = value * line.scale
            self._values[name] = scaled if have is None or scaled > have else have
        elif combine == "fallback":
            self._fallback[name] = value * line.scale
        elif combine == "count_zero":
            self._sums[name] = self._sums.get(name, 0) + (1 if value == 0 else 0)
        else:  # sum, fallback_sum: kept apart, `fallback_sum` only used when no value
            key = name if combine == "sum" else "\0" + name
            self._sums[key] = self._sums.get(key, 0) + value * line.scale

    def __len__(self) -> int:
        return len(self._values) + len(self._fallback) + len(self._sums)

    def metrics(self) -> dict[str, float]:
        """The GPU's canonical values (fallbacks and per-block sums only where no value)."""
        out = {name: number(float(v)) for name, v in self._values.items()}
        for key, total in self._sums.items():
            if key[0] == "\0":
                out.setdefault(key[1:], number(float(total)))
            else:
                out[key] = number(float(total))
        for name, value in self._fallback.items():
            out.setdefault(name, number(float(value)))
        return out


def gpu_index(line: Line | None, labels: Mapping[str, str], series: str = "") -> int | None:
    """The GPU index a series' labels give: its line's index label; for a series no file
    names, `gpu` (dcgm-exporter), else `gpu_id` (AMD), else `id` on a `habanalabs_` series."""
    if line is not None:
        value = labels.get(line.index_label)
    else:
        value = labels.get(UNKNOWN_INDEX_LABEL) or labels.get("gpu_id")
        if value is None and series.startswith("habanalabs_"):
            value = labels.get("id")
    if type(value) is not str or not value.isdigit():
        return None
    return int(value)


def temp_source(metrics: Mapping[str, object]) -> str:
    """Which temperature `temp_c` is (docs/integrations.md, Exporters and their mapping files):
    'edge' or 'junction' where the exporter says, else '' (dcgm-exporter's GPU temperature)."""
    if "temp_edge_c" in metrics:
        return "edge"
    if "temp_junction_c" in metrics:
        return "junction"
    return ""


def not_reported(names: Iterable[str]) -> dict[str, list[str]]:
    """canonical name → the exporters whose files cannot fill it (for "not reported by …")."""
    wanted = list(names)
    return {name: [e.name for e in exporters() if name not in e.names()] for name in wanted}


# A GPU's identity when its series carried none: kept as stored (the intake leaves blank
# identity alone).
NO_IDENTITY = ("", "", "")


def gpu_samples(
    values: Mapping[tuple[str, int], GpuValues],
    identity: Mapping[tuple[str, int], tuple[str, str, str]],
    ts: dt.datetime,
) -> list[TelemetrySample]:
    """One sample per (host, GPU) that has values, in order: its metrics, its identity
    (uuid, model, PCI address; an AMD PCI device id as model is read as the model's name)
    and the vendor and `source` of the exporter that named it — what exposition text and a
    Prometheus answer both come to."""
    from apps.telemetry.intake import TelemetrySample

    out = []
    for (host, gpu), accumulated in sorted(values.items()):
        metrics = accumulated.metrics()
        if metrics:
            made = exporter_named(accumulated.exporter)
            vendor, source = (made.vendor, made.slug) if made else ("", "")
            uuid, model, bus = identity.get((host, gpu), NO_IDENTITY)
            model = model_name(vendor, model)  # AMD's card_model may be a PCI device id
            out.append(TelemetrySample(host, gpu, ts, metrics, uuid, model, bus, vendor, source))
    return out
