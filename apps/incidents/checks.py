"""`manage.py check --deploy` for incidents: alerts out needs the dashboard's own address
(docs/alertmanager.md, Alerts out)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.checks import CheckMessage, Warning, register

LOOPBACK = ("localhost", "127.0.0.1", "::1", "")


@register("kuae", deploy=True)
def alertmanager_base_url(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """KUAE_ALERTMANAGER_URL set while KUAE_BASE_URL is unset (the loopback default) or
    loopback: the alerts' `url` and `generatorURL` would point nowhere a person can open."""
    if not settings.KUAE_ALERTMANAGER_URL:
        return []
    host = urlsplit(settings.KUAE_BASE_URL or "").hostname or ""
    if host.lower() not in LOOPBACK:
        return []
    return [
        Warning(
            "KUAE_ALERTMANAGER_URL is set but KUAE_BASE_URL is not (or is a loopback "
            f"address: {settings.KUAE_BASE_URL!r})",
            hint="Set KUAE_BASE_URL to the dashboard's public address, such as "
            "https://kuae.example.com: the alerts posted to Alertmanager link to it.",
            id="incidents.W001",
        )
    ]
