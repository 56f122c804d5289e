"""What the GPU checks see of each GPU: its latest values."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field


@dataclass(frozen=True)
class GpuLatest:
    """A GPU's latest values (only the metrics a check asked for), when they arrived, and
    the exporter they came from."""

    node: str
    index: int
    model: str
    metrics: dict[str, float] = field(default_factory=dict)
    updated_at: dt.datetime | None = None
    probe_at: dt.datetime | None = None
    source: str = ""  # its exporter's mapping file (dcgm, amd, gaudi); '' for posted JSON
