"""The `KuaeWatchdog` alert: the dead man's switch a site's paging service watches
(docs/alertmanager.md, The watchdog).

While every part detection depends on is within its limit (docs/operations.md, Watching the
watcher) KUAE keeps this alert firing at its Alertmanagers, re-posted with the incidents'
alerts; when detection stops — the worker frozen, beat dead, a check not completing — the
next round ends it (`endsAt` = now), and when KUAE stops altogether it lapses on its own
(`endsAt` was now + 4 repeat periods). The site's paging service pages when the switch
stops.
"""

from __future__ import annotations

import datetime as dt

from django.conf import settings

from apps.health.pipeline import detection_status
from apps.incidents.alertmanager import OUR_SOURCE
from apps.incidents.alerts_out import OutAlert

ALERTNAME = "KuaeWatchdog"


def watchdog_alerts(now: dt.datetime) -> list[OutAlert]:
    """The watchdog alert while detection works, else none. Its `startsAt` is the hour it
    is in, so the alert is not re-sent as changed at every round."""
    if not detection_status(now=now).ok:
        return []
    url = f"{settings.KUAE_BASE_URL.rstrip('/')}/health/"
    return [
        OutAlert(
            subject="watchdog",
            labels={"alertname": ALERTNAME, "severity": "none", "source": OUR_SOURCE},
            starts_at=now.replace(minute=0, second=0, microsecond=0),
            annotations={
                "summary": "KUAE Ops is detecting: every health check, beat and a worker work",
                "url": url,
            },
            generator_url=url,
        )
    ]
