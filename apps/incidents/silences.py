"""Silences the Alertmanager intake asks about before it opens an incident
(docs/maintenance.md, What a window does).

The incidents app knows no maintenance window (docs/architecture.md, Readers lent downwards): the
maintenance app lends its `silence` here from its `AppConfig.ready()`. The intake hands it
the alerts it has placed on a node and that feed no incident yet; the fingerprints it
answers are kept on a window as silenced and open nothing.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence

from apps.common.lending import Registry
from apps.fleet.models import Node
from apps.incidents.alertmanager import Alert

# (alert, the node it names) pairs and the receive time → fingerprints kept on a window.
Silencer = Callable[[Sequence[tuple[Alert, Node]], dt.datetime], set[str]]

_lent = Registry("apps.incidents.silences", lenders={"silence": "the maintenance app"})


def lend(*, silence: Silencer) -> None:
    """Register the silencer (the maintenance app does, at start-up)."""
    _lent["silence"] = silence


def silenced(alerts: Sequence[tuple[Alert, Node]], now: dt.datetime) -> set[str]:
    """The fingerprints of `alerts` that a silence kept (and recorded): no incident for them."""
    if not alerts:
        return set()
    found: set[str] = _lent["silence"](alerts, now)
    return found
