"""Alertmanager webhook (version 4) → plain alert records (docs/alertmanager.md). Pure.

Only a body that is not a webhook payload is refused (BatchError → 400); where an alert is
placed (node, cluster) is the service's business, and an alert it cannot place is kept,
never refused — a 4xx makes Alertmanager re-send the whole group.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass, field
from typing import Any

from apps.common.errors import BatchError
from apps.common.timeutil import parse_ts
from apps.incidents.categories import alert_category

NODE_LABELS = ("node", "hostname", "Hostname", "instance")
SEVERITIES = {"critical": "sev1", "error": "sev2", "major": "sev2", "warning": "sev3"}
ZERO_TIME = dt.datetime(1, 1, 1, tzinfo=dt.UTC)
MAX_ALERTS = 1_000  # docs/operations.md, Limits: alerts per webhook
MAX_FINGERPRINT = 64
# The `source` label of the alerts KUAE posts to Alertmanager itself
# (docs/alertmanager.md, Alerts out): one that comes back through the intake is ignored.
OUR_SOURCE = "kuae"


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
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    # Per node label present, in NODE_LABELS order: the names it may stand for.
    node_candidates: list[list[str]] = field(default_factory=list)
    cluster_label: str = ""
    gpu: str = ""
    gpu_uuid: str = ""

    @property
    def name(self) -> str:
        """The alert's `alertname`."""
        return self.labels.get("alertname", "")


def host_names(value: str) -> list[str]:
    """The names a node label may stand for, most literal first: the value itself, without
    its port (`host:port`, `[v6]:port`), and the short name of an FQDN (`h.example.com` → `h`).
    An IP address is returned in canonical form and never shortened."""
    text = value.strip()
    out = [text]
    host = text
    if text.startswith("[") and "]" in text:
        host = text[1 : text.index("]")]
    elif text.count(":") == 1:
        host = text.rsplit(":", 1)[0]
    try:
        out.append(str(ipaddress.ip_address(host)))
    except ValueError:
        out.append(host)
        lowered = host.lower().removesuffix(".")
        out.append(lowered)
        if "." in lowered:
            out.append(lowered.split(".", 1)[0])
    return [name for i, name in enumerate(out) if name and name not in out[:i]]


def _strings(raw: object, where: str, errors: dict[str, list[str]]) -> dict[str, str]:
    """Labels or annotations: an object of strings (a number is taken as its text)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        errors[where] = ["must be an object"]
        return {}
    out = {}
    for key, value in raw.items():
        if isinstance(value, dict | list) or value is None:
            errors[where] = [f"{str(key)[:60]!r} must be a string"]
            continue
        text = str(value)
        if "\x00" in key or "\x00" in text:
            errors[where] = ["must not contain a NUL character"]
            continue
        out[str(key)] = text
    return out


def parse_webhook(payload: Any) -> list[Alert]:
    """Parse the webhook; BatchError names `alerts[i].field` for anything unusable, and the
    bound (1,000 alerts) before anything else is read."""
    if not isinstance(payload, dict) or not isinstance(payload.get("alerts"), list):
        raise BatchError({"alerts": ["expected an Alertmanager webhook with a list 'alerts'"]})
    if str(payload.get("version", "4")) != "4":
        raise BatchError({"version": ["only webhook version 4 is understood"]})
    if len(payload["alerts"]) > MAX_ALERTS:
        raise BatchError(
            {
                "alerts": [
                    f"at most {MAX_ALERTS} alerts per webhook, got {len(payload['alerts'])}"
                    " (set the receiver's max_alerts)"
                ]
            }
        )
    errors: dict[str, list[str]] = {}
    out = []
    for i, raw in enumerate(payload["alerts"]):
        where = f"alerts[{i}]"
        if not isinstance(raw, dict):
            errors[where] = ["must be an object"]
            continue
        labels = _strings(raw.get("labels"), f"{where}.labels", errors)
        notes = _strings(raw.get("annotations"), f"{where}.annotations", errors)
        fingerprint = raw.get("fingerprint")
        if not isinstance(fingerprint, str) or not fingerprint.strip():
            errors[f"{where}.fingerprint"] = ["required"]
            fingerprint = ""
        elif len(fingerprint) > MAX_FINGERPRINT or "\x00" in fingerprint:
            errors[f"{where}.fingerprint"] = [f"at most {MAX_FINGERPRINT} characters, no NUL"]
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
        if any(key.startswith(where) for key in errors) or starts is None:
            continue
        out.append(
            Alert(
                fingerprint=fingerprint,
                firing=status == "firing",
                title=(notes.get("summary") or labels.get("alertname") or "Alert")[:300],
                description=notes.get("description", "")[:5000],
                category=alert_category(labels, notes),
                severity=SEVERITIES.get(labels.get("severity", "").lower(), "sev4"),
                starts_at=starts,
                ends_at=ends,
                labels=labels,
                annotations=notes,
                node_candidates=[host_names(labels[k]) for k in NODE_LABELS if labels.get(k)],
                cluster_label=labels.get("cluster", ""),
                gpu=labels.get("gpu", ""),
                gpu_uuid=labels.get("UUID", "") or labels.get("uuid", ""),
            )
        )
    if errors:
        raise BatchError(errors)
    return out
