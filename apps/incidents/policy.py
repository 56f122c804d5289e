"""Who may change what on an incident — the one rule the API and the pages both apply.

Engineers edit everything. Operators acknowledge (move an incident to investigating or
mitigated), set its times and its assignee, nothing else. Making another field an operator's is one
edit here.
"""

from __future__ import annotations

from collections.abc import Mapping

from apps.incidents.choices import IncidentStatus
from apps.incidents.services import TIMES

OPERATOR_FIELDS = frozenset({"status", "assignee", *TIMES})
OPERATOR_STATUSES = (IncidentStatus.INVESTIGATING, IncidentStatus.MITIGATED)


def change_refusal(*, engineer: bool, changes: Mapping[str, object]) -> str | None:
    """Why this person may not make these changes, or None when they may."""
    if engineer:
        return None
    extra = sorted(set(changes) - OPERATOR_FIELDS)
    status = changes.get("status")
    if not extra and (status is None or status in OPERATOR_STATUSES):
        return None
    refused = ", ".join(extra) if extra else f"status {status}"
    allowed = " or ".join(s.value for s in OPERATOR_STATUSES)
    return f"operators acknowledge (status {allowed}), set times and assignee; not: {refused}"


def status_choices(*, engineer: bool) -> list[tuple[str, str]]:
    """The statuses this person may choose."""
    statuses = list(IncidentStatus) if engineer else OPERATOR_STATUSES
    return [(s.value, str(s.label)) for s in statuses]
