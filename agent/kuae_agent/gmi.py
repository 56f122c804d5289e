"""Moore Threads GPUs through `mthreads-gmi`'s table (`--mthreads-gmi`).

Read as Moore Threads publish it (their tutorial_on_musa repository shows the output of a
plain `mthreads-gmi`, docs/agent.md cites the pages):

    ID   Name           |PCIe                |%GPU  Mem
         Device Type    |Pcie Lane Width     |Temp  MPC Capable
                                             |      ECC Mode
    +-------------------------------------------------------------+
    0    MTT S4000      |00000000:08:00.0    |88%   44302MiB(32768MiB)
         Physical       |16x(16x)            |65C   YES
                                             |      N/A

Each GPU is three rows: index, name, PCI address, utilisation and memory used (total);
then device type, lane width, temperature; then ECC mode. That table has no power, no ECC
counts, no retired pages and no MTLink state: those come only through `--mtml`. A cell
that is `N/A` or not in the published shape is left out of the sample.
"""

from __future__ import annotations

import datetime as dt
import re
import subprocess
from typing import Any

VENDOR = "mthreads"

_FIRST = re.compile(
    r"^(?P<index>\d+)\s+(?P<name>\S.*?)\s*\|\s*(?P<bus>\S+)\s*\|\s*(?P<util>\S+)\s+(?P<mem>\S+)"
)
_SECOND = re.compile(r"^\s+\S.*?\|\s*\S+\s*\|\s*(?P<temp>\S+)")
_PERCENT = re.compile(r"^(\d+(?:\.\d+)?)%$")
_MEMORY = re.compile(r"^(\d+(?:\.\d+)?)MiB\((\d+(?:\.\d+)?)MiB\)$")
_CELSIUS = re.compile(r"^(-?\d+(?:\.\d+)?)C$")
_BUS = re.compile(r"^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


def parse_gmi_table(text: str, *, node: str, ts: dt.datetime) -> list[dict[str, Any]]:
    """`mthreads-gmi`'s table → one telemetry sample per GPU row (with `vendor`, `model` and
    `pci_bus`); rows of the processes table and anything else are skipped."""
    when = ts.isoformat().replace("+00:00", "Z")
    samples: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for line in text.splitlines():
        if match := _FIRST.match(line):
            metrics: dict[str, float] = {}
            if util := _PERCENT.match(match["util"]):
                metrics["gpu_util"] = float(util[1])
            if memory := _MEMORY.match(match["mem"]):
                metrics["mem_used_mib"] = float(memory[1])
                metrics["mem_total_mib"] = float(memory[2])
            current = {
                "node": node,
                "gpu": int(match["index"]),
                "ts": when,
                "metrics": metrics,
                "vendor": VENDOR,
                "model": match["name"],
            }
            if _BUS.match(match["bus"]):
                current["pci_bus"] = match["bus"]
            samples.append(current)
        elif current is not None and (match := _SECOND.match(line)):
            if temp := _CELSIUS.match(match["temp"]):
                current["metrics"].setdefault("temp_c", float(temp[1]))
            current = None  # the ECC row and the rule below it say nothing more
        elif line.startswith(("+", "-")) or not line.strip():
            current = None
    return [sample for sample in samples if sample["metrics"]]


def read_mthreads_gmi(
    *, node: str, ts: dt.datetime, binary: str = "mthreads-gmi"
) -> list[dict[str, Any]]:
    """Run `mthreads-gmi` and parse its table."""
    out = subprocess.run([binary], capture_output=True, text=True, timeout=30, check=True).stdout
    return parse_gmi_table(out, node=node, ts=ts)
