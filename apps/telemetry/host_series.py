"""node_exporter's host series (`edac`, `filesystem`, `timex` collectors) → host readings
(docs/integrations.md, Host readings from node_exporter and a site's Prometheus).

The mapping is the kinds' declarations (apps/telemetry/host_kinds.py), read here and never
restated: a kind that node_exporter publishes (`HostKind.from_node_exporter`) names, per
value, the series it is read from — or, for a text value, the label it is read from — and
the label naming its subject (`subject_label`; none for a kind of one subject, whose subject
is its `example`). A new kind with its series is thus read from node_exporter's text, from
the scraper and from a site's Prometheus with no line of code here.

node_exporter carries no host label: the caller names the node (the intake's `?node=`, the
scraper the node it scraped, a cluster's Prometheus the series' `instance`). Pure.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from apps.common.limits import HOST_SUBJECTS_PER_NODE
from apps.telemetry.host import HostReadingIn
from apps.telemetry.host_kinds import HOST_KINDS, HostKind, Source, Value
from apps.telemetry.infiniband import node_of_instance

PULL_PREFIX = "host:"  # a check's `pulls` name of a kind: `host:memory` (`pull_name`)
# Subjects gathered from one text or answer, per node, before they are refused: the store's
# bound with room for the pseudo filesystems it skips.
MAX_SUBJECTS = 4 * HOST_SUBJECTS_PER_NODE


@dataclass(frozen=True)
class SeriesOf:
    """Where one node_exporter series goes: its kind and the value it fills."""

    kind: HostKind
    value: Value


def published_kinds(kinds: Collection[str] | None = None) -> list[HostKind]:
    """The kinds node_exporter publishes, of `kinds` (slugs; None: every one)."""
    return [
        kind
        for kind in HOST_KINDS.values()
        if kind.from_node_exporter and (kinds is None or kind.slug in kinds)
    ]


def series_index(kinds: Collection[str] | None = None) -> dict[str, SeriesOf]:
    """node_exporter series name → its kind and value, of the published kinds among `kinds`;
    read from HOST_KINDS on each call (a dozen entries), so a kind added there is read."""
    return {
        value.series: SeriesOf(kind, value)
        for kind in published_kinds(kinds)
        for value in kind.values
        if value.series and value.type != "text"
    }


def pull_name(kind: str) -> str:
    """The name a check lists in its `pulls` to have a kind's readings pulled from a
    cluster's Prometheus before it runs: `host:memory`."""
    return PULL_PREFIX + kind


def pulled_kinds(metrics: Collection[str] | None) -> list[str] | None:
    """The host kinds named in a pull's `metrics` (`pull_name`; None: every kind)."""
    if metrics is None:
        return None
    return [m.removeprefix(PULL_PREFIX) for m in metrics if m.startswith(PULL_PREFIX)]


class HostSeries:
    """The host series of one text (or one node's series of an answer), gathered per
    (kind, subject): each series its value, the text values from the labels of any of
    the subject's series. Series no kind declares are not taken."""

    def __init__(self, kinds: Collection[str] | None = None) -> None:
        self._index = series_index(kinds)
        self._subjects: dict[tuple[str, str], dict[str, int | float | str]] = {}

    def __bool__(self) -> bool:
        return bool(self._subjects)

    def add(self, name: str, labels: Mapping[str, str], value: float) -> bool:
        """Take one sample of series `name`: False when no kind declares it; ValueError
        naming the series for a subject label or value its kind refuses, or a text of more
        than MAX_SUBJECTS subjects."""
        where = self._index.get(name)
        if where is None:
            return False
        kind = where.kind
        if kind.subject_label:
            try:
                subject = kind.read_subject(labels.get(kind.subject_label, ""))
            except ValueError as exc:
                raise ValueError(f"{name}: label {kind.subject_label} {exc}") from exc
        else:
            subject = kind.example
        key = (kind.slug, subject)
        values = self._subjects.get(key)
        if values is None:
            if len(self._subjects) >= MAX_SUBJECTS:
                raise ValueError(f"{name}: more than {MAX_SUBJECTS} host subjects in one text")
            values = self._subjects[key] = {}
        for declared in kind.values:
            if declared.type == "text" and declared.name not in values:
                text = labels.get(declared.series)
                if not text:
                    continue
                try:
                    values[declared.name] = declared.parse(text)
                except ValueError as exc:
                    raise ValueError(f"{name}: label {declared.series} {exc}") from exc
        if not math.isfinite(value):
            raise ValueError(f"{name} ({where.value.name}) of {subject}: must be a finite number")
        try:
            values[where.value.name] = where.value.parse(value)
        except ValueError as exc:
            raise ValueError(f"{name} ({where.value.name}) of {subject}: {exc}") from exc
        return True

    def readings(self, *, node: str, ts: dt.datetime, source: str) -> list[HostReadingIn]:
        """One reading per (kind, subject) that has a value besides its labels' text, by
        kind and subject, filed under `node` at `ts`."""
        out = []
        for (kind, subject), values in sorted(self._subjects.items()):
            if any(HOST_KINDS[kind].by_name[name].type != "text" for name in values):
                out.append(HostReadingIn(node, kind, subject, ts, dict(values), source))
        return out


# --- from a cluster's Prometheus (docs/integrations.md, 2d. Prometheus as the telemetry source)


def host_query(kinds: Collection[str] | None = None) -> str | None:
    """The one instant query of a pull's host readings: the latest value of the series of
    the published kinds among `kinds` (None: all), one series per (series, instance,
    subject and text labels) — `max by` merges two scrape jobs or an HA pair reporting the
    same one. None when node_exporter publishes none of them."""
    published = published_kinds(kinds)
    names = sorted(series_index(kinds))
    if not names:
        return None
    labels = dict.fromkeys(["__name__", "instance"])
    for kind in published:
        if kind.subject_label:
            labels[kind.subject_label] = None
        labels.update((v.series, None) for v in kind.values if v.type == "text" and v.series)
    return f'max by ({", ".join(labels)}) ({{__name__=~"{"|".join(names)}"}})'


def host_readings_of_vector(
    vector: Iterable[tuple[Mapping[str, str], float]],
    *,
    hosts: Mapping[str, str],
    ts: dt.datetime,
    kinds: Collection[str] | None = None,
) -> list[HostReadingIn]:
    """A reading per (node, kind, subject) of the nodes in `hosts`
    (apps.telemetry.infiniband.instance_index), at `ts`, source `prometheus`: the series of
    other instances are left out, and so is a series whose labels or value the intake would
    refuse (one bad series never keeps the others out)."""
    per_node: dict[str, HostSeries] = {}
    for labels, value in vector:
        name, instance = labels.get("__name__"), labels.get("instance")
        if type(name) is not str or type(instance) is not str:
            continue
        if any(type(v) is not str for v in labels.values()):
            continue  # a server may send anything: the declarations read text
        node = node_of_instance(instance, hosts)
        if node is None:
            continue
        try:
            per_node.setdefault(node, HostSeries(kinds)).add(name, labels, value)
        except ValueError:
            continue
    return [
        r
        for node, series in sorted(per_node.items())
        for r in series.readings(node=node, ts=ts, source=Source.PROMETHEUS)
    ]
