"""The node page's Host card and `GET nodes/{hostname}/host/`: a node's host readings by kind,
each subject's values as a person reads them, and the kinds it never reported
(docs/integrations.md, Host readings). The mounts show the cluster's required mounts first,
each with its state by the `storage` check's rule (apps/telemetry/mounts.py), then the
node's other mounts. Only reads."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from apps.common.words import Words
from apps.fleet.models import Node
from apps.telemetry.host_kinds import HOST_KINDS, HostKind, Source, counter_went_down
from apps.telemetry.models import HostReading
from apps.telemetry.mounts import MountState, in_newest_report, mount_state, newest_report

FILESYSTEM = "filesystem"  # the mounts' kind (apps/telemetry/host_kinds.py)


@dataclass(frozen=True)
class Shown:
    """One value as the card shows it: its words, and a tone (`fail`, `warn`, or '' for
    none) when it is worth a look — never colour alone: the words say it too."""

    text: str
    tone: str = ""


@dataclass(frozen=True)
class Row:
    """One subject's latest reading on the card: its subject, values by column, its time
    and source, and a note beside the subject (a mount the cluster requires: "required")."""

    subject: str
    cells: list[tuple[Words, Shown]]  # (the column's heading, the value)
    ts: dt.datetime | None
    source: str
    note: str = ""


@dataclass(frozen=True)
class Section:
    """One kind on the card: its declaration, its rows (none: "not reported"), why the
    node's source cannot report it when that is why, and the subjects the cluster requires
    of it (the mounts), named when the node never reported the kind."""

    kind: HostKind
    subject_label: Words
    columns: list[Words]
    rows: list[Row] = field(default_factory=list)
    cannot: str = ""
    required: list[str] = field(default_factory=list)


def node_host_readings(node: Node) -> list[HostReading]:
    """The node's host readings (one query), by kind in HOST_KINDS' order, then subject."""
    order = {slug: i for i, slug in enumerate(HOST_KINDS)}
    readings = list(HostReading.objects.filter(node=node, ts__isnull=False))
    return sorted(readings, key=lambda r: (order.get(r.kind, len(order)), r.kind, r.subject))


def not_reported(readings: list[HostReading]) -> list[str]:
    """The kinds (slugs) of which the node has no reading."""
    seen = {r.kind for r in readings}
    return [slug for slug in HOST_KINDS if slug not in seen]


def host_sections(
    readings: list[HostReading], required_mounts: Sequence[str] = ()
) -> list[Section]:
    """The card's sections, one per declared kind, its rows built by the kind's builder;
    the mounts' rows are the cluster's `required_mounts` first (see `mount_rows`)."""
    sources = {r.source for r in readings}
    exporter_only = bool(sources) and Source.AGENT not in sources
    out = []
    for slug, kind in HOST_KINDS.items():
        subject_label, columns, build = _CARD.get(slug) or _plain(kind)
        mine = [r for r in readings if r.kind == slug]
        rows = []
        for reading in mine:
            cells = build(reading.values or {}, reading.prev_values or {})
            shown = [(label, cells.get(key, Shown("—"))) for key, label in columns]
            rows.append(Row(reading.subject, shown, reading.ts, reading.source))
        required: list[str] = []
        if slug == FILESYSTEM:
            required = list(dict.fromkeys(required_mounts))
            if rows:  # a node that never reported its mounts is not judged: "not reported"
                rows = mount_rows(mine, rows, required)
        cannot = ""
        if not rows and exporter_only and not kind.from_node_exporter:
            cannot = gettext("node_exporter publishes no such series; the node agent reads them")
        labels = [label for _, label in columns]
        out.append(Section(kind, subject_label, labels, rows, cannot, required))
    return out


def mount_rows(readings: list[HostReading], rows: list[Row], required: list[str]) -> list[Row]:
    """The mounts' rows (`rows`, one per reading of `readings`, the node's filesystem
    readings): each required mount first, in the cluster's order, marked "required" with
    its state — ok, read-only, device error, or missing when the node's newest filesystem
    report does not hold it (the `storage` check's rule, apps/telemetry/mounts.py) — then the
    node's other mounts, shown only (their state in plain words, judged by no check)."""
    newest = newest_report(r.ts for r in readings if r.ts is not None)
    by_point = {
        reading.subject: (reading, row) for reading, row in zip(readings, rows, strict=True)
    }
    out = []
    for point in required:
        reading, row = by_point.get(point, (None, None))
        current = reading is not None and in_newest_report(reading.ts, newest)
        state = mount_state((reading.values or {}) if reading is not None and current else None)
        shown = (
            Shown("✓ " + gettext("ok"))
            if state is MountState.OK
            else Shown(f"✗ {_mount_words(state)}", "fail")
        )
        if row is None:
            cells = [(label, Shown("—")) for _, label in _MOUNT_COLUMNS]
            row = Row(point, cells, None, "")
        cells = [(label, shown if label == STATE else cell) for label, cell in row.cells]
        out.append(Row(row.subject, cells, row.ts, row.source, note=gettext("required")))
    for reading, row in zip(readings, rows, strict=True):
        if reading.subject in required:
            continue
        if in_newest_report(reading.ts, newest):
            state_words = _mount_words(mount_state(reading.values or {}))
        else:
            state_words = gettext("not in the latest report")
        cells = [(label, Shown(state_words) if label == STATE else c) for label, c in row.cells]
        out.append(Row(row.subject, cells, row.ts, row.source))
    return out


MOUNT_WORDS = {
    MountState.OK: _("ok"),
    MountState.READ_ONLY: _("read-only"),
    MountState.DEVICE_ERROR: _("device error"),
    MountState.MISSING: _("missing"),
}


def _mount_words(state: MountState) -> str:
    """A mount's state in the page's language."""
    return str(MOUNT_WORDS.get(state, state))


def kinds_in_words(sections: list[Section]) -> str:
    """The kinds' labels as a sentence says them: "memory controllers, mounts, PCIe devices
    and clock" (a label's first letter lowered unless it begins a capitalised word: PCIe)."""
    labels = [str(s.kind.label) for s in sections]
    words = [label if label[1:2].isupper() else label[:1].lower() + label[1:] for label in labels]
    if len(words) == 1:
        return words[0]
    return gettext("%(some)s and %(last)s") % {
        "some": gettext(", ").join(words[:-1]),
        "last": words[-1],
    }


_Build = Callable[[dict[str, Any], dict[str, Any]], dict[str, Shown]]


def _plain(kind: HostKind) -> tuple[Words, list[tuple[str, Words]], _Build]:
    """A kind the card has no layout for: its subject and each value as it is."""

    def build(values: dict[str, Any], previous: dict[str, Any]) -> dict[str, Shown]:
        return {name: Shown(str(value)) for name, value in values.items()}

    return gettext("Subject"), [(v.name, v.label) for v in kind.values], build


def _count(name: str, values: dict[str, Any], previous: dict[str, Any], tone: str) -> Shown:
    """A counter with its growth since the previous reading (`tone` when it grew), or that it
    was reset; '—' when not reported."""
    value, before = values.get(name), previous.get(name)
    if value is None:
        return Shown("—")
    text = f"{value:,}"
    if counter_went_down(before, value):
        return Shown(gettext("%(count)s (reset)") % {"count": text})
    if isinstance(before, int | float) and value > before:
        return Shown(f"{text} (+{value - before:,})", tone)
    return Shown(text)


def _memory(values: dict[str, Any], previous: dict[str, Any]) -> dict[str, Shown]:
    return {
        "ce": _count("ce_total", values, previous, "warn"),
        "ue": _count("ue_total", values, previous, "fail"),
    }


def _filesystem(values: dict[str, Any], previous: dict[str, Any]) -> dict[str, Shown]:
    size, avail = values.get("size_bytes"), values.get("avail_bytes")
    if isinstance(size, int | float) and isinstance(avail, int | float) and size > 0:
        free = Shown(
            gettext("%(free)s of %(size)s (%(share)s)")
            % {"free": byte_size(avail), "size": byte_size(size), "share": f"{avail / size:.0%}"}
        )
    elif isinstance(avail, int | float):
        free = Shown(byte_size(avail))
    else:
        free = Shown("—")
    return {  # the state: `mount_rows`, by the storage check's rule
        "device": Shown(str(values.get("device", "—"))),
        "fstype": Shown(str(values.get("fstype", "—"))),
        "free": free,
    }


def _pcie(values: dict[str, Any], previous: dict[str, Any]) -> dict[str, Shown]:
    role = str(values.get("role", ""))
    aer = [
        _count("aer_correctable_total", values, previous, "warn"),
        _count("aer_nonfatal_total", values, previous, "warn"),
        _count("aer_fatal_total", values, previous, "fail"),
    ]
    tone = "fail" if aer[2].tone else ("warn" if any(a.tone for a in aer) else "")
    return {
        "role": Shown({"gpu": "GPU", "nic": "NIC"}.get(role, role or "—")),
        "width": _against(values.get("link_width"), values.get("max_link_width"), "x{:g}"),
        "speed": _against(
            values.get("link_speed_gts"), values.get("max_link_speed_gts"), "{:g} GT/s"
        ),
        "aer": Shown(" · ".join(a.text for a in aer), tone),
    }


def _against(value: object, maximum: object, form: str) -> Shown:
    """A link's width or speed against its maximum: flagged when below it."""
    if not isinstance(value, int | float):
        return Shown("—")
    if not isinstance(maximum, int | float):
        return Shown(form.format(value))
    said = gettext("%(value)s of %(maximum)s") % {
        "value": form.format(value),
        "maximum": form.format(maximum),
    }
    if value < maximum:
        return Shown(f"◐ {said}", "warn")
    return Shown(said)


def _clock(values: dict[str, Any], previous: dict[str, Any]) -> dict[str, Shown]:
    offset, synced = values.get("offset_s"), values.get("synced")
    return {
        "offset": Shown("—" if offset is None else offset_text(offset)),
        "synced": Shown("—")
        if synced is None
        else (
            Shown("✓ " + gettext("synchronised"))
            if synced == 1
            else Shown("✗ " + gettext("not synchronised"), "warn")
        ),
    }


STATE = _("State")  # the mounts' state column
_MOUNT_COLUMNS: list[tuple[str, Words]] = [
    ("device", _("Device")),
    ("fstype", _("Type")),
    ("free", _("Free")),
    ("state", STATE),
]

# Each kind's layout on the card: the subject's column, the value columns (key, heading)
# and the builder of a row's cells; a kind not here is shown value by value (`_plain`).
_CARD: dict[str, tuple[Words, list[tuple[str, Words]], _Build]] = {
    "memory": (
        _("Controller"),
        [("ce", _("Correctable (CE)")), ("ue", _("Uncorrectable (UE)"))],
        _memory,
    ),
    "filesystem": (_("Mount point"), _MOUNT_COLUMNS, _filesystem),
    "pcie": (
        _("Address"),
        [
            ("role", _("Role")),
            ("width", _("Width")),
            ("speed", _("Speed")),
            ("aer", _("AER correctable · non-fatal · fatal")),
        ],
        _pcie,
    ),  # fmt: skip
    "clock": (_("Clock"), [("offset", _("Offset")), ("synced", _("Synchronised"))], _clock),
}


def byte_size(value: float) -> str:
    """Bytes in binary units: 0 B, 512 B, 3.5 GiB, 1.2 TiB."""
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(size) < 1024 or unit == "PiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} PiB"  # not reached


def offset_text(seconds: float) -> str:
    """A clock's offset, signed: +0.4 ms, −12 ms, +1.25 s, −3.0 h."""
    sign = "−" if seconds < 0 else "+"
    size = abs(seconds)
    if size < 1:
        return f"{sign}{size * 1000:.3g} ms"
    if size < 600:
        return f"{sign}{size:.3g} s"
    if size < 172_800:
        return f"{sign}{size / 3600:.1f} h"
    return f"{sign}{size / 86_400:.1f} d"
