"""Template context shared by every page: the navigation."""

from __future__ import annotations

from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

# (url name, label, url-name prefixes that mark the entry as current)
NAV = (
    ("overview", _("Overview"), ("overview",)),
    ("node-list", _("Nodes"), ("node-",)),
    ("job-list", _("Jobs"), ("job-",)),
    ("incident-list", _("Incidents"), ("incident-", "postmortem", "action-item")),
    ("reliability", _("Reliability"), ("reliability",)),
    ("weekly-report", _("Weekly report"), ("weekly-",)),
    ("trends", _("Trends"), ("trends",)),
    ("health", _("Health"), ("health",)),
    ("maintenance", _("Maintenance"), ("maintenance",)),
    ("repairs", _("Repairs"), ("repair",)),
)


def nav(request: HttpRequest) -> dict[str, object]:
    """Navigation entries, each with whether it is the current section."""
    match = getattr(request, "resolver_match", None)
    current = (match.url_name or "") if match else ""
    return {"nav_items": [(name, label, current.startswith(prefix)) for name, label, prefix in NAV]}
