"""node_exporter's `infiniband` collector series (`node_infiniband_*`, labels `device` and
`port`) → NIC ports' readings (docs/integrations.md, NIC ports). node_exporter carries no
host label: the caller names the node."""

from __future__ import annotations

import datetime as dt
import math

from apps.common.limits import PORTS_PER_NODE
from apps.telemetry.ports import DEVICE, MAX_PORT_NUMBER, PHYS_STATES, STATES, PortReading

PREFIX = "node_infiniband_"
BYTES_PER_SECOND_PER_GBPS = 1.25e8
# node_exporter's series (less PREFIX) → the reading's name.
SERIES = {
    "state_id": "state",
    "physical_state_id": "phys_state",
    "rate_bytes_per_second": "rate_gbps",
    "link_downed_total": "link_downed",
    "link_error_recovery_total": "link_error_recovery",
    "symbol_error_total": "symbol_error",
    "local_link_integrity_errors_total": "local_link_integrity_errors",
    "excessive_buffer_overrun_errors_total": "excessive_buffer_overrun_errors",
    "port_errors_received_total": "port_rcv_errors",
    "port_discards_transmitted_total": "port_xmit_discards",
    "port_receive_remote_physical_errors_total": "port_rcv_remote_physical_errors",
    "port_transmit_wait_total": "port_xmit_wait",
}


class NoHostError(ValueError):
    """`node_infiniband_*` series with no node to file them under."""


class InfinibandPorts:
    """The `node_infiniband_*` sample lines of one text, gathered per (device, port); other
    names of the collector (`…_info`, data and packet counts) are ignored."""

    def __init__(self) -> None:
        self._ports: dict[tuple[str, int], dict[str, object]] = {}

    def __bool__(self) -> bool:
        return bool(self._ports)

    def add(self, name: str, labels: dict[str, str], value: float) -> None:
        """Take one sample line of series `name`; ValueError naming the series for a bad
        label or value, or a text of more than PORTS_PER_NODE ports."""
        field = SERIES.get(name.removeprefix(PREFIX))
        if field is None:
            return
        device, port = labels.get("device", ""), labels.get("port", "")
        if not DEVICE.fullmatch(device):
            raise ValueError(f"{name}: label device must be a device name such as mlx5_0")
        if not port.isdigit() or int(port) > MAX_PORT_NUMBER:
            raise ValueError(f"{name}: label port must be a port number ≤ {MAX_PORT_NUMBER}")
        key = (device, int(port))
        values = self._ports.get(key)
        if values is None:
            if len(self._ports) >= PORTS_PER_NODE:  # docs/operations.md, Limits
                raise ValueError(
                    f"{name}: more than {PORTS_PER_NODE} ports: past the bound of "
                    f"{PORTS_PER_NODE} ports per node"
                )
            values = self._ports[key] = {}
        try:
            values[field] = _value(field, value)
        except ValueError as exc:
            raise ValueError(f"{name} ({field}) of {device}/{port}: {exc}") from exc

    def readings(self, *, node: str | None, ts: dt.datetime) -> list[PortReading]:
        """One reading per port, by device and port; NoHostError when there are ports and
        no `node`."""
        if not self._ports:
            return []
        if not node:
            raise NoHostError("node_infiniband_* series carry no host label: give ?node=HOST")
        out = []
        for (device, port), values in sorted(self._ports.items()):
            state = values.pop("state", "")
            phys_state = values.pop("phys_state", "")
            rate = values.pop("rate_gbps", None)
            out.append(
                PortReading(
                    node,
                    device,
                    port,
                    ts,
                    state=str(state),
                    phys_state=str(phys_state),
                    rate_gbps=rate if isinstance(rate, float) else None,
                    counters={k: v for k, v in values.items() if isinstance(v, int)},
                )
            )
        return out


def _value(field: str, value: float) -> str | float | int:
    if not math.isfinite(value):
        raise ValueError("must be a finite number")
    if field in ("state", "phys_state"):
        names = STATES if field == "state" else PHYS_STATES
        if not value.is_integer() or int(value) not in names:
            known = ", ".join(f"{k} {v}" for k, v in names.items())
            raise ValueError(f"must be one of {known}")
        return names[int(value)]
    if value < 0:
        raise ValueError("must be ≥ 0")
    if field == "rate_gbps":
        return value / BYTES_PER_SECOND_PER_GBPS
    if not value.is_integer() or value >= 2**64:
        raise ValueError("must be an integer below 2**64 (a 64-bit counter)")
    return int(value)
