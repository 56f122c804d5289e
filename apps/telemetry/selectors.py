"""Reads of telemetry for pages: a node's events (each XID explained from NVIDIA's
catalogue) and its 5-minute rollups."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.utils.translation import gettext

from apps.fleet.models import Node
from apps.telemetry.models import NodeRollup, TelemetryEvent
from apps.telemetry.xids import (
    ACTION_LABELS,
    XidInfo,
    action_takes_out_of_service,
    xid154_action,
    xid_info,
)


def node_events(*, node: Node, limit: int = 50) -> list[TelemetryEvent]:
    """A node's XID/ECC/reset events, newest first."""
    return list(TelemetryEvent.objects.filter(node=node).order_by("-at", "-id")[:limit])


@dataclass(frozen=True)
class EventRow:
    """A node-page row: the event, and for an XID its entry in NVIDIA's catalogue (None for
    a code the catalogue does not know, or an event that is no XID)."""

    event: TelemetryEvent
    xid: XidInfo | None

    @property
    def unknown_xid(self) -> bool:
        """An XID whose code the catalogue does not know."""
        return self.event.kind == TelemetryEvent.Kind.XID and self.xid is None

    @property
    def action(self) -> str | None:
        """The immediate-action bucket: the catalogue's, or the one an XID 154 names."""
        if self.xid is None:
            return None
        if self.xid.code == 154:
            return xid154_action(self.event.message) or self.xid.action
        return self.xid.action

    @property
    def action_label(self) -> str:
        """The recommended action in words ('' for an event that is no known XID)."""
        action = self.action
        return "" if action is None else gettext(ACTION_LABELS.get(action, action))

    @property
    def out_of_service(self) -> bool:
        """Whether that action needs the GPU or the node out of service."""
        return self.action is not None and action_takes_out_of_service(self.action)


def node_event_rows(*, node: Node, limit: int = 50) -> list[EventRow]:
    """A node's events, newest first, each XID with its mnemonic and recommended action."""
    return [
        EventRow(e, xid_info(int(e.value)) if e.kind == TelemetryEvent.Kind.XID else None)
        for e in node_events(node=node, limit=limit)
    ]


def node_rollups(*, node: Node, since: dt.datetime) -> list[NodeRollup]:
    """A node's 5-minute rollups since `since`, oldest first."""
    return list(NodeRollup.objects.filter(node=node, bucket__gte=since).order_by("bucket"))
