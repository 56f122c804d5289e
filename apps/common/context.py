"""Template context shared by every page: the navigation."""

from __future__ import annotations

from django.http import HttpRequest

# (url name, label, url-name prefixes that mark the entry as current)
NAV = (
    ("overview", "Overview", ("overview",)),
    ("node-list", "Nodes", ("node-",)),
    ("job-list", "Jobs", ("job-",)),
    ("incident-list", "Incidents", ("incident-", "postmortem", "action-item")),
    ("reliability", "Reliability", ("reliability",)),
    ("weekly-report", "Weekly report", ("weekly-",)),
    ("trends", "Trends", ("trends",)),
    ("health", "Health", ("health",)),
    ("maintenance", "Maintenance", ("maintenance",)),
    ("repairs", "Repairs", ("repair",)),
)


def nav(request: HttpRequest) -> dict[str, object]:
    """Navigation entries, each with whether it is the current section."""
    match = getattr(request, "resolver_match", None)
    current = (match.url_name or "") if match else ""
    return {"nav_items": [(name, label, current.startswith(prefix)) for name, label, prefix in NAV]}
