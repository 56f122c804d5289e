"""Alertmanager webhook bodies for the intake tests, shaped like the real thing (the copy
of a real delivery in tests/data/alertmanager/firing.json, version 4)."""

from __future__ import annotations

import json
from typing import Any

from tests.support import SHARED

FIRING: dict[str, Any] = json.loads((SHARED / "alertmanager" / "firing.json").read_text())
STARTS = "2026-11-28T03:14:07.512345678Z"  # Alertmanager writes nanoseconds
NOT_SET = "0001-01-01T00:00:00Z"  # a firing alert's endsAt
URL = "/api/v1/ingest/alertmanager/"


def alert(
    fingerprint: str,
    *,
    status: str = "firing",
    starts: str = STARTS,
    ends: str = NOT_SET,
    summary: str = "",
    **labels: str,
) -> dict[str, Any]:
    """One alert as Alertmanager sends it; `alertname` defaults to GpuXidError."""
    labels.setdefault("alertname", "GpuXidError")
    return {
        "status": status,
        "labels": labels,
        "annotations": {"summary": summary} if summary else {},
        "startsAt": starts,
        "endsAt": ends,
        "generatorURL": "http://prometheus:9090/graph",
        "fingerprint": fingerprint,
    }


def webhook(*alerts: dict[str, Any]) -> dict[str, Any]:
    """A version-4 webhook carrying `alerts` as one group."""
    firing = any(a["status"] == "firing" for a in alerts)
    return {
        "version": "4",
        "groupKey": '{}:{alertname="GpuXidError"}',
        "truncatedAlerts": 0,
        "status": "firing" if firing else "resolved",
        "receiver": "kuae",
        "groupLabels": {},
        "commonLabels": {},
        "commonAnnotations": {},
        "externalURL": "http://alertmanager:9093",
        "alerts": list(alerts),
    }


def counts(**nonzero: int) -> dict[str, int]:
    """The intake's answer with every key, zero unless given."""
    keys = ("opened", "updated", "reopened", "folded", "resolved", "unrouted", "deferred")
    return {key: nonzero.get(key, 0) for key in (*keys, "silenced", "ignored")}
