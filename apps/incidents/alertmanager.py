"""Alertmanager webhook (version 4) → plain alert records, as CONTRACT §2 maps them. Pure."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from apps.common.errors import BatchError
from apps.common.timeutil import parse_ts
from apps.incidents.choices import Category

NODE_LABELS = ("node", "hostname", "Hostname", "instance")
SEVERITIES = {"critical": "sev1", "error": "sev2", "major": "sev2", "warning": "sev3"}
ZERO_TIME = dt.datetime(1, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class Alert:
    """One alert of the webhook."""

    fingerprint: str
    firing: bool
    title: str
    description: str
    category: str
    severity: str
    starts_at: dt.datetime
    ends_at: dt.datetime | None
    node_candidates: list[str] = field(default_factory=list)
    cluster_label: str = ""


def _host(label: str, value: str) -> str:
    """`instance` is host:port; the port is not part of the node's name."""
    if label == "instance" and ":" in value and not value.startswith("["):
        return value.rsplit(":", 1)[0]
    return value


def parse_webhook(payload: Any) -> list[Alert]:
    """Parse the webhook; BatchError names `alerts[i].field` for anything unusable."""
    if not isinstance(payload, dict) or not isinstance(payload.get("alerts"), list):
        raise BatchError({"alerts": ["expected an Alertmanager webhook with a list 'alerts'"]})
    if str(payload.get("version", "4")) != "4":
        raise BatchError({"version": ["only webhook version 4 is understood"]})
    errors: dict[str, list[str]] = {}
    out = []
    for i, raw in enumerate(payload["alerts"]):
        where = f"alerts[{i}]"
        if not isinstance(raw, dict):
            errors[where] = ["must be an object"]
            continue
        labels = raw.get("labels") if isinstance(raw.get("labels"), dict) else {}
        notes = raw.get("annotations") if isinstance(raw.get("annotations"), dict) else {}
        fingerprint = raw.get("fingerprint")
        if not isinstance(fingerprint, str) or not fingerprint:
            errors[f"{where}.fingerprint"] = ["required"]
        status = raw.get("status")
        if status not in ("firing", "resolved"):
            errors[f"{where}.status"] = ["must be firing or resolved"]
        try:
            starts = parse_ts(raw.get("startsAt"))
        except ValueError as exc:
            errors[f"{where}.startsAt"] = [str(exc)]
            starts = None
        ends = None
        if raw.get("endsAt"):
            try:
                ends = parse_ts(raw["endsAt"])
            except ValueError as exc:
                errors[f"{where}.endsAt"] = [str(exc)]
            if ends is not None and ends <= ZERO_TIME:
                ends = None  # Alertmanager's "not set"
        if any(key.startswith(where) for key in errors):
            continue
        category = labels.get("category", "")
        out.append(
            Alert(
                fingerprint=fingerprint,
                firing=status == "firing",
                title=str(notes.get("summary") or labels.get("alertname") or "Alert")[:300],
                description=str(notes.get("description") or ""),
                category=category if category in Category.values else Category.OTHER,
                severity=SEVERITIES.get(str(labels.get("severity", "")).lower(), "sev4"),
                starts_at=starts,
                ends_at=ends,
                node_candidates=[_host(k, str(labels[k])) for k in NODE_LABELS if labels.get(k)],
                cluster_label=str(labels.get("cluster", "")),
            )
        )
    if errors:
        raise BatchError(errors)
    return out
