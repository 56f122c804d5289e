"""What a node reports about its host, as data (docs/integrations.md, Host readings): each
kind of reading is a declaration here — its name, what its subject is, its values with
their types and, for the Prometheus intake, the node_exporter series each is read from.
A new kind is a new entry of `HOST_KINDS`, never a model or a migration: every kind is
stored in the one table of `apps.telemetry.models.HostReading`. Pure: no Django.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from django.utils.translation import gettext_lazy as _

from apps.common.parse import integer, number
from apps.common.words import Words
from apps.telemetry.pcibus import pci_bus_normal

# How a value is read and kept, by its type (`Value.type`):
#   counter  a non-negative integer below 2**64 that only grows until it is reset
#            (a lower value than before is a reset, never an error);
#   amount   a non-negative finite number up to `Value.maximum` (bytes, lanes, GT/s);
#   number   a finite number within ±`Value.maximum` (a clock's offset);
#   flag     0 or 1 (JSON true and false too), kept as 0 or 1;
#   text     a short string (a device, a filesystem's type, a device's role).
TYPES = ("counter", "amount", "number", "flag", "text")
COUNTER_LIMIT = 2**64
_PRINTABLE = re.compile(r"[^\x00-\x1f\x7f]+")


@dataclass(frozen=True)
class Value:
    """One value a kind of reading carries: its name, type (`TYPES`), what a person reads,
    its unit, its bounds, a text form it may also be sent in (a regex whose first group is
    the number: sysfs's `32.0 GT/s PCIe`), and the node_exporter series it is read from
    (or, for a text value, the series' label; '' where node_exporter has none)."""

    name: str
    type: str
    label: Words
    unit: str = ""
    maximum: float = 0.0
    max_length: int = 64
    text_form: re.Pattern[str] | None = None
    pattern: re.Pattern[str] | None = None
    lower: bool = False
    series: str = ""

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise ValueError(f"{self.name}: type {self.type!r} is none of {', '.join(TYPES)}")

    def parse(self, raw: object) -> int | float | str:
        """The value as kept; ValueError, with a message fit for a 400, when it is not one."""
        if self.type == "counter":
            if type(raw) is int and 0 <= raw < COUNTER_LIMIT:  # the common case, at once
                return raw
            count = integer(raw, minimum=0)
            if count >= COUNTER_LIMIT:
                raise ValueError("must be below 2**64 (a 64-bit counter)")
            return count
        if self.type == "flag":
            if raw in (0, 1) and type(raw) in (int, bool, float):
                return int(raw)
            raise ValueError("must be 0 or 1")
        if self.type == "text":
            return self._text(raw)
        if isinstance(raw, str) and self.text_form is not None:
            match = self.text_form.fullmatch(raw.strip())
            if match is None:
                raise ValueError(f"must be a number of {self.unit}, or text such as sysfs writes")
            raw = float(match.group(1))
        low = 0.0 if self.type == "amount" else -self.maximum
        value = number(raw, minimum=low, maximum=self.maximum)
        if isinstance(raw, int) and not isinstance(raw, bool):
            return raw  # an exact integer stays one (bytes)
        return int(value) if value.is_integer() and abs(value) < 2**53 else value

    def _text(self, raw: object) -> str:
        if not isinstance(raw, str) or not raw.strip():
            raise ValueError("must be a non-empty string")
        value = raw.strip()
        if len(value) > self.max_length:
            raise ValueError(f"must be at most {self.max_length} characters")
        if not _PRINTABLE.fullmatch(value):
            raise ValueError("must not contain control characters")
        if self.lower:
            value = value.lower()
        if self.pattern is not None and not self.pattern.fullmatch(value):
            raise ValueError(f"must match {self.pattern.pattern}")
        return value


@dataclass(frozen=True)
class HostKind:
    """A kind of host reading: its slug, what a person reads, what its subject is (in words,
    with an example) and how a subject is read into its one spelling (ValueError when it is
    none), its values, when a reading is not stored at all (`skip`: a pseudo filesystem),
    and what node_exporter publishes of it (`from_node_exporter`; its series are the values'
    `series`), with the label naming its subject (read by `read_subject`; '' for a kind of
    one subject, `example`)."""

    slug: str
    label: Words
    subject: str
    example: str
    read_subject: Callable[[object], str]
    values: tuple[Value, ...]
    skip: Callable[[Mapping[str, object]], bool] | None = None
    from_node_exporter: bool = False
    subject_label: str = ""
    by_name: Mapping[str, Value] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_name", MappingProxyType({v.name: v for v in self.values}))


SUBJECT_LENGTH = 512  # the most characters of a subject (HostReading.subject)
_MC = re.compile(r"(?:mc)?([0-9]{1,4})")
_CLOCK = re.compile(r"[a-z0-9][a-z0-9_.-]{0,31}")


def memory_controller(raw: object) -> str:
    """`mc0` (EDAC's name in sysfs), or node_exporter's `controller` label `0` → `mc0`."""
    if isinstance(raw, int) and not isinstance(raw, bool):
        raw = str(raw)
    match = _MC.fullmatch(raw.strip().lower()) if isinstance(raw, str) else None
    if match is None:
        raise ValueError("must be a memory controller such as mc0")
    return f"mc{int(match.group(1))}"


def mount_point(raw: object) -> str:
    """An absolute path, without a trailing `/` (but `/` itself): `/checkpoints/` is
    `/checkpoints`."""
    if not isinstance(raw, str) or not raw.startswith("/"):
        raise ValueError("must be a mount point: an absolute path such as /checkpoints")
    if len(raw) > SUBJECT_LENGTH:
        raise ValueError(f"must be at most {SUBJECT_LENGTH} characters")
    if not _PRINTABLE.fullmatch(raw):
        raise ValueError("must not contain control characters")
    return raw.rstrip("/") or "/"


def pci_address(raw: object) -> str:
    """A PCI address in its normal form (`0000:17:00.0`; apps/telemetry/pcibus.py)."""
    if not isinstance(raw, str):
        raise ValueError("must be a PCI address such as 0000:17:00.0")
    return pci_bus_normal(raw)


def the_kernel(raw: object) -> str:
    """`kernel`: a kind the node's kernel reports once (its `/proc/vmstat` counters)."""
    if not (isinstance(raw, str) and raw.strip().lower() == "kernel"):
        raise ValueError("must be kernel")
    return "kernel"


def clock_name(raw: object) -> str:
    """`system` (the kernel's clock, adjtimex), or another clock's short name (`ptp0`)."""
    value = raw.strip().lower() if isinstance(raw, str) else ""
    if not _CLOCK.fullmatch(value):
        raise ValueError("must be a clock's name such as system")
    return value


# Filesystems that hold no data of a job (the kernel's and the container runtime's own): a
# reading of one is not stored, only counted (docs/integrations.md, Host readings).
PSEUDO_FILESYSTEMS = frozenset(
    {
        "autofs",
        "binfmt_misc",
        "bpf",
        "cgroup",
        "cgroup2",
        "configfs",
        "debugfs",
        "devpts",
        "devtmpfs",
        "efivarfs",
        "fuse.gvfsd-fuse",
        "fuse.lxcfs",
        "fusectl",
        "hugetlbfs",
        "mqueue",
        "nfsd",
        "nsfs",
        "overlay",
        "proc",
        "pstore",
        "ramfs",
        "rootfs",
        "rpc_pipefs",
        "securityfs",
        "selinuxfs",
        "squashfs",
        "sysfs",
        "tmpfs",
        "tracefs",
    }
)


def pseudo_filesystem(values: Mapping[str, object]) -> bool:
    """Whether a filesystem reading is of a pseudo filesystem (its `fstype`)."""
    fstype = values.get("fstype")
    return isinstance(fstype, str) and fstype.lower() in PSEUDO_FILESYSTEMS


_GTS = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*GT/s\b.*", re.IGNORECASE)
_FSTYPE = re.compile(r"[a-z0-9_.+-]{1,64}")
_ROLE = re.compile(r"[a-z0-9_-]{1,32}")
BYTES_LIMIT = float(2**64)
LANES = 32.0  # PCIe's widest link
GTS_LIMIT = 256.0  # GT/s, above PCIe 7's 128
OFFSET_LIMIT = 1e10  # seconds either way: a clock reset to 1970 is 1.8e9 s behind

HOST_KINDS: Mapping[str, HostKind] = MappingProxyType(
    {
        kind.slug: kind
        for kind in (
            HostKind(
                slug="memory",
                label=_("Memory controllers"),
                subject="a memory controller, as EDAC names it",
                example="mc0",
                read_subject=memory_controller,
                values=(
                    Value(
                        "ce_total",
                        "counter",
                        "correctable errors",
                        series="node_edac_correctable_errors_total",
                    ),
                    Value(
                        "ue_total",
                        "counter",
                        "uncorrectable errors",
                        series="node_edac_uncorrectable_errors_total",
                    ),
                ),
                from_node_exporter=True,
                subject_label="controller",
            ),
            HostKind(
                slug="filesystem",
                label=_("Mounts"),
                subject="a mount point",
                example="/checkpoints",
                read_subject=mount_point,
                values=(
                    Value("device", "text", "device", max_length=255, series="device"),
                    Value(
                        "fstype",
                        "text",
                        "filesystem type",
                        pattern=_FSTYPE,
                        lower=True,
                        series="fstype",
                    ),
                    Value("readonly", "flag", "read-only", series="node_filesystem_readonly"),
                    Value(
                        "size_bytes",
                        "amount",
                        "size",
                        "bytes",
                        BYTES_LIMIT,
                        series="node_filesystem_size_bytes",
                    ),
                    Value(
                        "avail_bytes",
                        "amount",
                        "available",
                        "bytes",
                        BYTES_LIMIT,
                        series="node_filesystem_avail_bytes",
                    ),
                    Value(
                        "device_error",
                        "flag",
                        "device error",
                        series="node_filesystem_device_error",
                    ),
                ),
                skip=pseudo_filesystem,
                from_node_exporter=True,
                subject_label="mountpoint",
            ),
            HostKind(
                slug="pcie",
                label=_("PCIe devices"),
                subject="a device's PCI address",
                example="0000:17:00.0",
                read_subject=pci_address,
                values=(
                    Value("role", "text", "role", pattern=_ROLE, lower=True),
                    Value("link_width", "amount", "link width", "lanes", LANES),
                    Value("max_link_width", "amount", "maximum link width", "lanes", LANES),
                    Value(
                        "link_speed_gts", "amount", "link speed", "GT/s", GTS_LIMIT, text_form=_GTS
                    ),
                    Value(
                        "max_link_speed_gts",
                        "amount",
                        "maximum link speed",
                        "GT/s",
                        GTS_LIMIT,
                        text_form=_GTS,
                    ),
                    Value("aer_correctable_total", "counter", "AER correctable errors"),
                    Value("aer_nonfatal_total", "counter", "AER non-fatal errors"),
                    Value("aer_fatal_total", "counter", "AER fatal errors"),
                ),
            ),
            HostKind(
                slug="clock",
                label=_("Clock"),
                subject="a clock, `system` for the kernel's",
                example="system",
                read_subject=clock_name,
                values=(
                    Value(
                        "offset_s",
                        "number",
                        "offset",
                        "s",
                        OFFSET_LIMIT,
                        series="node_timex_offset_seconds",
                    ),
                    Value("synced", "flag", "synchronised", series="node_timex_sync_status"),
                ),
                from_node_exporter=True,  # one clock: the timex series have no label
            ),
            HostKind(
                slug="vmstat",
                label=_("Kernel memory events"),
                subject="`kernel`: the node's kernel, once",
                example="kernel",
                read_subject=the_kernel,
                values=(
                    Value(
                        "oom_kill_total",
                        "counter",
                        _("out-of-memory kills"),
                        series="node_vmstat_oom_kill",
                    ),
                ),
                from_node_exporter=True,  # vmstat's series have no label
            ),
        )
    }
)


class Source:
    """Where a reading came from: the node agent (and JSON posted by anyone), node_exporter's
    text (posted or scraped), or the cluster's Prometheus."""

    AGENT = "agent"
    NODE_EXPORTER = "node_exporter"
    PROMETHEUS = "prometheus"
    ALL = (AGENT, NODE_EXPORTER, PROMETHEUS)
    LABELS: Mapping[str, str] = MappingProxyType(
        {AGENT: "the node agent", NODE_EXPORTER: "node_exporter", PROMETHEUS: "Prometheus"}
    )


def counter_went_down(previous: object, latest: object) -> bool:
    """Whether a counter is lower than before: it was reset (never an error, never negative
    growth)."""
    return (
        isinstance(previous, int | float)
        and isinstance(latest, int | float)
        and math.isfinite(previous)
        and latest < previous
    )
