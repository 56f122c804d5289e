"""node_exporter's `infiniband` collector series (`node_infiniband_*`, labels `device` and
`port`) → NIC ports' readings (docs/integrations.md, NIC ports). node_exporter carries no
host label: the caller names the node — the intake's `?node=`, the scraper the node it
scraped, a cluster's Prometheus the series' `instance` without its port. Pure."""

from __future__ import annotations

import datetime as dt
import ipaddress
import math
from collections.abc import Iterable, Mapping

from apps.common.limits import PORTS_PER_NODE
from apps.fleet.addresses import address_normalize
from apps.telemetry.ports import (
    DEVICE,
    MAX_PORT_NUMBER,
    PHYS_STATES,
    STATES,
    PortReading,
    state_of_number,
)

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
# The ports' names node_exporter publishes (not `hw_counters/`: rnr_nak_retry_err and
# local_ack_timeout_err are the agent's alone).
PORT_METRICS = frozenset(SERIES.values())


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
        if not value.is_integer() or value < 0:
            known = ", ".join(f"{k} {v}" for k, v in names.items())
            raise ValueError(f"must be a state's number ({known}, …)")
        # A number the table does not name (a state the kernel adds) is `UNKNOWN_N`, not
        # ACTIVE: never the refusal of the whole text.
        return state_of_number(int(value), names)
    if value < 0:
        raise ValueError("must be ≥ 0")
    if field == "rate_gbps":
        return value / BYTES_PER_SECOND_PER_GBPS
    if not value.is_integer() or value >= 2**64:
        raise ValueError("must be an integer below 2**64 (a 64-bit counter)")
    return int(value)


# --- from a cluster's Prometheus (docs/integrations.md, 2d. Prometheus as the telemetry source)

# The labels a port's value is filed under: the series, the target and the port.
PORT_LABELS = ("__name__", "instance", "device", "port")


def infiniband_query(metrics: Iterable[str] | None = None) -> str | None:
    """The one instant query of a pull's ports: the latest value of the node_infiniband_*
    series stored as `metrics` (KUAE's names; None: all of them), one series per (series,
    instance, device, port) — `max by` merges two scrape jobs or an HA pair of Prometheus
    reporting the same port. None when node_exporter publishes none of `metrics`."""
    wanted = PORT_METRICS if metrics is None else set(metrics)
    names = sorted(PREFIX + series for series, name in SERIES.items() if name in wanted)
    if not names:
        return None
    return f'max by ({", ".join(PORT_LABELS)}) ({{__name__=~"{"|".join(names)}"}})'


def instance_host(instance: str) -> str:
    """An `instance` label without its port (`gpu-a017:9100` → `gpu-a017`, `[fd00::7]:9100`
    → `fd00::7`), an IP address in canonical form, a name in lower case."""
    text = instance.strip()
    if text.startswith("[") and "]" in text:
        text = text[1 : text.index("]")]
    elif text.count(":") == 1:
        text = text.rsplit(":", 1)[0]
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return text.lower().removesuffix(".")


def instance_index(
    hostnames: Iterable[str], addresses: Iterable[tuple[str, str]]
) -> dict[str, str]:
    """instance host (`instance_host`) → node hostname: each hostname in lower case, its
    short name when no other node shares it, and each (hostname, address) of the nodes'
    `addresses` (canonical form, apps.fleet.addresses)."""
    names = list(hostnames)
    out: dict[str, str] = {}
    shorts: dict[str, set[str]] = {}
    for hostname in names:
        out[hostname.lower()] = hostname
        shorts.setdefault(hostname.lower().split(".", 1)[0], set()).add(hostname)
    for short, owners in shorts.items():
        if len(owners) == 1:
            out.setdefault(short, next(iter(owners)))
    for hostname, address in addresses:
        canonical = address_normalize(address)
        if canonical:
            out.setdefault(canonical, hostname)
    return out


def readings_of_vector(
    vector: Iterable[tuple[Mapping[str, str], float]],
    *,
    hosts: Mapping[str, str],
    ts: dt.datetime,
) -> list[PortReading]:
    """A reading per port of the nodes in `hosts` (`instance_index`), at `ts`: the series
    of other instances are left out, and so is a series whose value or labels the intake
    would refuse (a bad value of one port never keeps the other ports out), as is a port
    past PORTS_PER_NODE."""
    per_node: dict[str, InfinibandPorts] = {}
    for labels, value in vector:
        name, instance = labels.get("__name__"), labels.get("instance")
        if type(name) is not str or type(instance) is not str:
            continue
        if type(labels.get("device", "")) is not str or type(labels.get("port", "")) is not str:
            continue  # a server may send anything: the intake's checks expect text
        node = node_of_instance(instance, hosts)
        if node is None:
            continue
        try:
            per_node.setdefault(node, InfinibandPorts()).add(name, dict(labels), value)
        except ValueError:
            continue
    return [r for node, ports in sorted(per_node.items()) for r in ports.readings(node=node, ts=ts)]


def node_of_instance(instance: str, hosts: Mapping[str, str]) -> str | None:
    """The node of `hosts` (`instance_index`) an `instance` label names: by its host
    (`instance_host`), else by that name's short name (never an address's); None when it
    names none of them."""
    host = instance_host(instance)
    node = hosts.get(host)
    if node is None and not _is_address(host):
        node = hosts.get(host.split(".", 1)[0])
    return node


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
