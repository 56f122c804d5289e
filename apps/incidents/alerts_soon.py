"""Alerts out at once (docs/alertmanager.md, Alerts out): an incident that opens, resolves,
changes or names other nodes has a round of alerts out queued for when its transaction
commits, instead of waiting for the next 10-s tick, which stays as the safety net. The
round is the tick's own (outbox rows, posted once each): a round with nothing new posts
nothing, so an early round sends no alert twice."""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.db.models.signals import m2m_changed, post_save

from apps.incidents.alerts_out import alertmanagers
from apps.incidents.models import Incident

log = logging.getLogger(__name__)


def alerts_out_soon() -> None:
    """Queue one alerts-out round for when this transaction commits (one per transaction,
    however many incidents it changes); nothing while no Alertmanager is configured."""
    if not alertmanagers():
        return
    pending = transaction.get_connection().run_on_commit
    if any(entry[1] is _queue_round for entry in pending):
        return
    transaction.on_commit(_queue_round, robust=True)


def _queue_round() -> None:
    """Queue the round; a broker that is down is no error of the incident's writer (the
    tick posts it once the broker is back)."""
    from apps.incidents.tasks import alerts_out

    try:
        alerts_out.delay()
    except Exception as exc:  # noqa: BLE001 - kombu's errors vary by transport
        log.warning("alerts out: round not queued, the tick will post it: %s", exc)


def _saved(sender: type[Incident], **kwargs: Any) -> None:  # noqa: ANN401
    alerts_out_soon()


def _nodes_changed(sender: type, action: str, **kwargs: Any) -> None:  # noqa: ANN401
    if action in ("post_add", "post_remove", "post_clear"):
        alerts_out_soon()


def connect() -> None:
    """Listen for incidents saved and for their nodes changing (the app's ready)."""
    post_save.connect(_saved, sender=Incident, dispatch_uid="kuae-alerts-out-soon")
    m2m_changed.connect(
        _nodes_changed, sender=Incident.nodes.through, dispatch_uid="kuae-alerts-out-soon-nodes"
    )
