"""What the agent reads on its node: dcgm-exporter's /metrics, or nvidia-smi's CSV."""

from __future__ import annotations

import csv
import datetime as dt
import io
import subprocess
from typing import Any

import httpx

# nvidia-smi --query-gpu field → KUAE's metric name
SMI_FIELDS = {
    "utilization.gpu": "gpu_util",
    "memory.used": "mem_used_mib",
    "temperature.gpu": "temp_c",
    "temperature.memory": "mem_temp_c",
    "power.draw": "power_w",
    "clocks.sm": "sm_clock_mhz",
}
SMI_QUERY = ["index", "uuid", "name", *SMI_FIELDS, "pci.bus_id"]


def read_exporter(url: str, timeout_s: float = 5.0) -> str:
    """The exporter's exposition text (raises httpx.HTTPError when it cannot be read)."""
    response = httpx.get(url, timeout=timeout_s)
    response.raise_for_status()
    return response.text


def parse_smi_csv(text: str, *, node: str, ts: dt.datetime) -> list[dict[str, Any]]:
    """`nvidia-smi --query-gpu=… --format=csv,noheader,nounits` → telemetry samples, with each
    GPU's PCI address (how the server places kernel-log XIDs). Fields nvidia-smi reports as
    `[N/A]` or `[Not Supported]` are left out."""
    samples = []
    for row in csv.reader(io.StringIO(text)):
        if not row or len(row) < len(SMI_QUERY):
            continue
        values = dict(zip(SMI_QUERY, (cell.strip() for cell in row), strict=False))
        metrics = {}
        for field, name in SMI_FIELDS.items():
            try:
                metrics[name] = float(values[field])
            except ValueError:
                continue
        if metrics:
            sample = {
                "node": node,
                "gpu": int(values["index"]),
                "ts": ts.isoformat().replace("+00:00", "Z"),
                "metrics": metrics,
            }
            if values["pci.bus_id"].count(":") == 2:
                sample["pci_bus"] = values["pci.bus_id"]
            samples.append(sample)
    return samples


def read_nvidia_smi(
    *, node: str, ts: dt.datetime, binary: str = "nvidia-smi"
) -> list[dict[str, Any]]:
    """Run nvidia-smi and parse its CSV."""
    out = subprocess.run(
        [binary, f"--query-gpu={','.join(SMI_QUERY)}", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    return parse_smi_csv(out, node=node, ts=ts)
