"""GPU vendors and models (docs/pages.md, Vendors and models): the vendors KUAE knows, the word
each uses for its GPU-to-GPU links, and the cited dense BF16 peak per model
(`data/gpu_peaks.csv`) that MFU divides by (docs/formulas.md, MFU). Pure: no database."""

from __future__ import annotations

import csv
import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apps.fleet.gpu_models import canonical_model, same_model

PEAKS_PATH = Path(__file__).with_name("data") / "gpu_peaks.csv"
AMD_PCI_IDS_PATH = Path(__file__).with_name("data") / "amd_pci_ids.csv"

VENDORS = ("nvidia", "amd", "intel", "mthreads")
VENDOR_LABELS = {"nvidia": "NVIDIA", "amd": "AMD", "intel": "Intel", "mthreads": "Moore Threads"}
# The vendor's own word for its GPU-to-GPU links (docs/pages.md, The interconnect's name).
LINK_WORDS = {"nvidia": "NVLink", "amd": "XGMI", "intel": "Gaudi links", "mthreads": "MTLink"}
GENERIC_LINK = "GPU links"
# Model-name prefixes that say the vendor when a sample did not (first match wins).
_HINTS = (
    ("mtt", "mthreads"),
    ("moore threads", "mthreads"),
    ("amd", "amd"),
    ("instinct", "amd"),
    ("mi1", "amd"),
    ("mi2", "amd"),
    ("mi3", "amd"),
    ("hl-", "intel"),
    ("intel", "intel"),
    ("gaudi", "intel"),
    ("nvidia", "nvidia"),
    ("tesla", "nvidia"),
    ("a100", "nvidia"),
    ("h100", "nvidia"),
    ("h200", "nvidia"),
    ("h800", "nvidia"),
    ("h20", "nvidia"),
    ("b200", "nvidia"),
    ("gb200", "nvidia"),
    ("l40", "nvidia"),
)


def vendor_error(value: Any) -> str | None:
    """Why `value` is not a vendor slug (None when it is one)."""
    if not isinstance(value, str) or value not in VENDORS:
        return f"must be one of {', '.join(VENDORS)}"
    return None


def model_key(model: str) -> str:
    """A model name compared without case and with runs of spaces as one."""
    return " ".join(model.split()).casefold()


def vendor_of(vendor: str, model: str) -> str:
    """The GPU's vendor: its own when known, else the one its model's name says (the peak
    table's, then a name prefix), else '' (unknown)."""
    if vendor:
        return vendor
    key = model_key(model)
    if not key:
        return ""
    row = table_row(model)
    if row is not None:
        return row.vendor
    return next((v for prefix, v in _HINTS if key.startswith(prefix)), "")


@functools.cache
def amd_pci_models() -> dict[str, str]:
    """PCI device id (4 hex digits, lower case) → AMD Instinct model name, from the cited
    `data/amd_pci_ids.csv`."""
    with AMD_PCI_IDS_PATH.open(encoding="utf-8") as handle:
        rows = csv.DictReader(line for line in handle if not line.startswith("#"))
        return {row["device_id"].lower().removeprefix("0x"): row["model"] for row in rows}


def model_name(vendor: str, model: str) -> str:
    """The model a GPU is filed under: its one name (apps.fleet.gpu_models: "H100" and
    "NVIDIA H100 80GB HBM3" are one model), an AMD GPU's PCI device id (`0x74a1`, as AMD's
    device-metrics-exporter may give `card_model`) read as its name ("AMD Instinct MI300X");
    a name or id in neither table as given, trimmed."""
    if vendor == "amd":
        text = model.strip().lower().removeprefix("0x")
        if len(text) == 4 and text in amd_pci_models():
            return canonical_model(amd_pci_models()[text])
    return canonical_model(model)


def gpu_name(vendor: str, model: str) -> str:
    """What a person reads for a GPU: the vendor's name before the model, unless the model
    already starts with it ("NVIDIA H100 80GB HBM3", "MTT S4000" → "Moore Threads MTT S4000")."""
    label = VENDOR_LABELS.get(vendor, "")
    if not label or model_key(model).startswith(model_key(label)):
        return model
    return f"{label} {model}".strip()


def link_word(vendor: str) -> str:
    """NVLink, XGMI, Gaudi links, MTLink; `GPU links` for an unknown vendor."""
    return LINK_WORDS.get(vendor, GENERIC_LINK)


@dataclass(frozen=True, slots=True)
class PeakRow:
    """One row of the cited peak table."""

    model: str
    vendor: str
    tflops: float
    source: str


@functools.cache
def peak_table() -> dict[str, PeakRow]:
    """The shipped table by every name a model is reported under (`model_key` form)."""
    with PEAKS_PATH.open(encoding="utf-8") as handle:
        rows = csv.DictReader(line for line in handle if not line.startswith("#"))
        out: dict[str, PeakRow] = {}
        for raw in rows:
            row = PeakRow(raw["model"], raw["vendor"], float(raw["tflops"]), raw["source"])
            for name in [raw["model"], *raw["names"].split(";")]:
                if name.strip():
                    out[model_key(name)] = row
    return out


def table_row(model: str) -> PeakRow | None:
    """The shipped peak table's row for a model, by any of its names (its one name's too)."""
    table = peak_table()
    return table.get(model_key(model)) or table.get(model_key(canonical_model(model)))


def peaks_error(value: Any) -> str | None:
    """Why `value` is not a `peak_tflops_by_model` map (None when it is): an object of model
    name (1 to 64 characters) → a positive, finite number of TFLOP/s, at most 200 models."""
    if not isinstance(value, dict):
        return "must be an object of model name: TFLOP/s"
    if len(value) > 200:
        return "at most 200 models"
    for name, peak in value.items():
        if not isinstance(name, str) or not 0 < len(name.strip()) <= 64:
            return "model names are 1 to 64 characters"
        if isinstance(peak, bool) or not isinstance(peak, int | float):
            return f"{name}: must be a number of TFLOP/s"
        if not math.isfinite(peak) or peak <= 0:
            return f"{name}: must be a positive number of TFLOP/s"
    return None


def peak_for(
    model: str, *, gpu_model: str, peak_tflops_per_gpu: float, by_model: Mapping[str, float]
) -> float | None:
    """A GPU model's dense BF16 peak in a cluster (docs/formulas.md, MFU): the cluster's
    `peak_tflops_by_model`, else its `peak_tflops_per_gpu` for its own `gpu_model` (a blank
    model is the cluster's), else the shipped table; None (peak unknown) otherwise. A model
    matches under any of its names (apps.fleet.gpu_models): "H100" is "NVIDIA H100 80GB HBM3"."""
    mine = model or gpu_model
    for name, peak in by_model.items():
        if same_model(name, mine):
            return float(peak)
    if same_model(mine, gpu_model) and peak_tflops_per_gpu > 0:
        return float(peak_tflops_per_gpu)
    row = table_row(mine)
    return row.tflops if row is not None else None


def common_vendor(vendors: list[str]) -> str:
    """The one vendor all of a node's GPUs share ('' when they differ or none is known): the
    word its node-level links (its `nvlink_domain`) are named by."""
    known = set(vendors) - {""}
    return known.pop() if len(known) == 1 else ""
