"""One name per GPU model (docs/pages.md, One name per model): the alias table that files a
GPU reported as "H100" (a cluster's default) and one reported as "NVIDIA H100 80GB HBM3"
(dcgm-exporter's `modelName`) under the same model, so the checks that compare GPUs of one
model (`slow_node`, `sdc`) and the GPUs page see one population. Pure: no database.

The name kept is the one the vendor's own tool reports (nvidia-smi's and dcgm-exporter's
product name, amd-smi's, hl-smi's, MTML's): what the exporters send is already the model's
name, and only short names and spellings a person types are mapped. A bare family name
("H100", "A100", "Gaudi 3") means the vendor's SXM/OAM training part; a cluster of another
variant (PCIe, 40 GB) sets that variant's full name. A name not in the table is kept as given,
without its surrounding spaces.
"""

from __future__ import annotations

import re

# The model's name → the other names it is reported or typed under. Matched without case,
# with '-' and '_' read as spaces and runs of spaces as one.
ALIASES: dict[str, tuple[str, ...]] = {
    # NVIDIA: nvidia-smi's / dcgm-exporter's product name
    "NVIDIA H100 80GB HBM3": (
        "H100",
        "NVIDIA H100",
        "H100 SXM",
        "H100 SXM5",
        "H100 SXM5 80GB",
        "NVIDIA H100 SXM5 80GB",
        "H100 80GB HBM3",
    ),
    "NVIDIA H100 PCIe": ("H100 PCIe", "H100 PCIe 80GB"),
    "NVIDIA H200": (
        "H200",
        "H200 SXM",
        "NVIDIA H200 SXM",
        "H200 SXM 141GB",
        "NVIDIA H200 SXM 141GB",
    ),
    "NVIDIA H800": ("H800", "H800 SXM", "H800 SXM5", "H800 SXM5 80GB", "NVIDIA H800 80GB HBM3"),
    "NVIDIA H20": ("H20", "H20 96GB", "NVIDIA H20 96GB"),
    "NVIDIA B200": ("B200",),
    "NVIDIA A100-SXM4-80GB": ("A100", "NVIDIA A100", "A100 SXM4 80GB", "A100 80GB", "A100 SXM"),
    "NVIDIA A100-SXM4-40GB": ("A100 SXM4 40GB", "A100 40GB"),
    "NVIDIA A100 80GB PCIe": ("A100 80GB PCIe", "A100 PCIe 80GB"),
    "NVIDIA A100-PCIE-40GB": ("A100 PCIe 40GB", "A100 40GB PCIe"),
    # AMD: amd-smi's product name ("AMD Instinct MI300X"); every Instinct name, see _INSTINCT
    # Intel Gaudi: hl-smi's product name
    "HL-325L": ("Gaudi 3", "Gaudi3", "Intel Gaudi 3", "Intel Gaudi3"),
    "HL-225": ("Gaudi 2", "Gaudi2", "Intel Gaudi 2", "Intel Gaudi2"),
    # Moore Threads: MTML's device name
    "MTT S4000": ("S4000", "Moore Threads MTT S4000", "Moore Threads S4000"),
}

# "MI300X", "Instinct MI300X", "AMD MI300X", "mi300x oam" → "AMD Instinct MI300X".
_INSTINCT = re.compile(r"(?:amd )?(?:instinct )?(mi\d{3}[a-z]?)(?: oam)?")


def _key(name: str) -> str:
    """A name as the table matches it: no case, '-' and '_' as spaces, one space in a row."""
    return " ".join(name.replace("-", " ").replace("_", " ").split()).casefold()


def _index() -> dict[str, str]:
    out: dict[str, str] = {}
    for model, names in ALIASES.items():
        for name in (model, *names):
            key = _key(name)
            if out.get(key, model) != model:
                raise ValueError(f"{name!r} names both {out[key]!r} and {model!r}")
            out[key] = model
    return out


_BY_KEY = _index()


def canonical_model(name: str) -> str:
    """The one name a GPU model is filed and compared under ("H100", "H100-SXM5-80GB" →
    "NVIDIA H100 80GB HBM3"; "MI300X" → "AMD Instinct MI300X"); an unknown name as given,
    trimmed; '' stays ''."""
    text = name.strip()
    key = _key(text)
    found = _BY_KEY.get(key)
    if found is not None:
        return found
    instinct = _INSTINCT.fullmatch(key)
    if instinct is not None:
        return f"AMD Instinct {instinct[1].upper()}"
    return text


def same_model(a: str, b: str) -> bool:
    """Whether two names are one model."""
    return _key(canonical_model(a)) == _key(canonical_model(b))
