"""Reads of incidents for pages."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import F, QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from apps.common.templatetags.kuae import seconds
from apps.fleet.models import Node
from apps.incidents.models import ActionItem, Incident, UnroutedAlert
from apps.jobs.models import Job

# Every time an incident carries, in the order of its page's Times table (field, label).
MARKS = (
    ("occurred_at", "occurred"),
    ("detected_at", "detected"),
    ("localized_at", "localised"),
    ("mitigated_at", "mitigated"),
    ("restarted_at", "restarted"),
    ("restored_at", "restored"),
    ("recovered_at", "recovered"),
    ("caught_up_at", "caught up"),
    ("resolved_at", "resolved"),
)
# What a page calls each mark (the labels above stay the marks' names: data-mark, the
# postmortem's first timeline).
MARK_WORDS = {
    "failed": gettext_lazy("failed"),
    "occurred": gettext_lazy("occurred"),
    "detected": gettext_lazy("detected"),
    "localised": gettext_lazy("localised"),
    "mitigated": gettext_lazy("mitigated"),
    "restarted": gettext_lazy("restarted"),
    "restored": gettext_lazy("restored"),
    "recovered": gettext_lazy("recovered"),
    "caught up": gettext_lazy("caught up"),
    "resolved": gettext_lazy("resolved"),
}
ROAD_STATE_WORDS = {
    "set": gettext_lazy("set"),
    "not yet": gettext_lazy("not yet"),
    "not recorded": gettext_lazy("not recorded"),
}


def mark_word(label: str) -> str:
    """A mark's name as the page's language says it ('caught up' → '已追上')."""
    return str(MARK_WORDS.get(label, label))


# The road back (docs/incidents.md, The road back): the marks always drawn, in this order;
# `recovered` (after `restored`) and `resolved` (last) are drawn where set. `failed` is f(i).
ROAD_MARKS = (
    ("failed", "failed"),
    ("detected_at", "detected"),
    ("localized_at", "localised"),
    ("mitigated_at", "mitigated"),
    ("restarted_at", "restarted"),
    ("restored_at", "restored"),
    ("caught_up_at", "caught up"),
)


def incident_list() -> QuerySet[Incident]:
    """Incidents, newest first, with cluster, job and nodes loaded in a fixed number of queries."""
    return (
        Incident.objects.select_related("cluster", "job")
        .prefetch_related("nodes")
        .order_by("-detected_at", "-id")
    )


@dataclass(frozen=True)
class Mark:
    """One of an incident's times that is set, with how long after the failure it came."""

    label: str
    at: dt.datetime
    since_failure_s: float


def time_marks(incident: Incident) -> list[Mark]:
    """The incident's times that are set, in the order of MARKS (its page's Times table)."""
    start = incident.failed_at
    return [
        Mark(label, at, max(0.0, (at - start).total_seconds()))
        for field, label in MARKS
        if (at := getattr(incident, field)) is not None
    ]


def time_rows(incident: Incident) -> list[tuple[str, dt.datetime | None, float | None]]:
    """Every time of MARKS as (label in the page's language, time or None, seconds after the
    failure or None): the Times table lists the missing ones too."""
    start = incident.failed_at
    rows: list[tuple[str, dt.datetime | None, float | None]] = []
    for field, label in MARKS:
        at = getattr(incident, field)
        rows.append((mark_word(label), at, None if at is None else (at - start).total_seconds()))
    return rows


@dataclass(frozen=True)
class RoadMark:
    """One mark of the road back (docs/incidents.md, The road back) and the segment leading to
    it from the nearest earlier mark that has a time (`gap_from`)."""

    label: str
    at: dt.datetime | None
    state: str  # "set", "not yet" (nothing later is known) or "not recorded"
    note: str = ""  # e.g. "= detected" for a failure whose start is not known
    gap_s: float | None = None  # seconds from `gap_from`'s time; never negative
    gap_from: str = ""
    before: bool = False  # this time is earlier than `gap_from`'s: recorded out of order

    @property
    def word(self) -> str:
        """The mark's name in the page's language."""
        return mark_word(self.label)

    @property
    def gap_text(self) -> str:
        """'+3 min', '+3 min after detected' when the mark before it has no time, '2 min
        before mitigated' for a time recorded out of order; '' without a time."""
        if self.gap_s is None:
            return ""
        span = seconds(self.gap_s)
        mark = mark_word(self.gap_from)
        if self.before:
            return _("%(span)s before %(mark)s") % {"span": span, "mark": mark}
        if self.gap_from:
            return _("+%(span)s after %(mark)s") % {"span": span, "mark": mark}
        return f"+{span}"

    @property
    def spoken(self) -> str:
        """The mark as the road's text alternative says it."""
        if self.at is None:
            return f"{self.word} {ROAD_STATE_WORDS.get(self.state, self.state)}"
        at = self.at.astimezone(dt.UTC).strftime("%m-%d %H:%M UTC")
        gap = f" ({self.gap_text})" if self.gap_text else ""
        return f"{self.word} {at}{gap}"


def road_back(incident: Incident) -> list[RoadMark]:
    """The road back of an incident as one line (docs/incidents.md, The road back): failed
    (f(i)), detected, localised, mitigated, restarted, restored, caught up — with
    `recovered` after `restored` and `resolved` at the end where they are set — in that
    order whatever the times say. A missing time is shown as missing, never invented; each
    set time is measured from the nearest earlier mark that has one, and a time earlier than
    that mark's (a requeue before the drain) says "before" rather than a negative gap."""
    fields = list(ROAD_MARKS)
    if incident.recovered_at is not None:  # training resumed: after restored
        fields.insert(fields.index(("restored_at", "restored")) + 1, ("recovered_at", "recovered"))
    if incident.resolved_at is not None:
        fields.append(("resolved_at", "resolved"))
    times = [
        incident.failed_at if field == "failed" else getattr(incident, field) for field, _ in fields
    ]
    settled = incident.resolved_at is not None
    out: list[RoadMark] = []
    prev: tuple[str, dt.datetime] | None = None
    for k, ((field, label), at) in enumerate(zip(fields, times, strict=True)):
        if at is None:
            later = settled or any(t is not None for t in times[k + 1 :])
            out.append(RoadMark(label, None, "not recorded" if later else "not yet"))
            continue
        unknown_start = field == "failed" and incident.occurred_at is None
        note = "= " + mark_word("detected") if unknown_start else ""
        if prev is None:
            out.append(RoadMark(label, at, "set", note))
        else:
            gap = (at - prev[1]).total_seconds()
            adjacent = out[-1].at is not None
            out.append(
                RoadMark(
                    label,
                    at,
                    "set",
                    note,
                    gap_s=abs(gap),
                    gap_from=prev[0] if gap < 0 or not adjacent else "",
                    before=gap < 0,
                )
            )
        prev = (label, at)
    return out


def road_summary(marks: list[RoadMark]) -> str:
    """The road's text alternative: every mark it shows, in order, with its time or why not."""
    return _("The road back: %(marks)s.") % {"marks": "; ".join(m.spoken for m in marks)}


def action_items(*, state: str = "open", owner: str = "") -> QuerySet[ActionItem]:
    """Action items with their incident: `open` (overdue first, by due date), `overdue`,
    `done` or `all`; optionally one owner's."""
    items = ActionItem.objects.select_related("owner", "postmortem__incident")
    today = timezone.now().date()
    if state == "overdue":
        items = items.filter(done=False, due__lt=today)
    elif state == "open":
        items = items.filter(done=False)
    elif state == "done":
        items = items.filter(done=True)
    if owner:
        items = items.filter(owner__username=owner)
    return items.order_by(F("due").asc(nulls_last=True), "id")


def overdue_count() -> int:
    """How many action items are past due and not done."""
    return ActionItem.objects.filter(done=False, due__lt=timezone.now().date()).count()


def unrouted_alerts(*, status: str = "") -> QuerySet[UnroutedAlert]:
    """Alertmanager alerts kept without an incident, optionally only `firing` or `resolved`."""
    alerts = UnroutedAlert.objects.all()
    if status in UnroutedAlert.Status.values:
        alerts = alerts.filter(status=status)
    return alerts


def unrouted_firing_count() -> int:
    """How many unrouted alerts are still firing."""
    return UnroutedAlert.objects.filter(status=UnroutedAlert.Status.FIRING).count()


def job_interruptions(job_id: int, limit: int) -> list[tuple[dt.datetime, dt.datetime | None]]:
    """The incidents that interrupted a job as (f(i), recovery or None), newest first, at
    most `limit` (one query; lent to the jobs app for its progress chart)."""
    rows = (
        Incident.objects.filter(job_id=job_id, interrupts_job=True)
        .order_by("-detected_at")
        .values_list("occurred_at", "detected_at", "recovered_at")[:limit]
    )
    return [(occurred or detected, recovered) for occurred, detected, recovered in rows]


def nodes_not_of_job(*, job: Job, nodes: Sequence[Node]) -> str:
    """Why `nodes` cannot be filed against `job`: a sentence naming each node that is not one
    of the job's, with the other running job it carries if any (docs/incidents.md, Filing);
    blank when every node is the job's. An incident naming a job with another job's nodes
    would mark that other job degraded and count innocent nodes as lemons."""
    own = set(job.nodes.values_list("pk", flat=True))
    strangers = [n for n in nodes if n.pk not in own]
    if not strangers:
        return ""
    running: dict[int, list[str]] = {}
    for node_id, name, pk in (
        Job.nodes.through.objects.filter(node__in=strangers, job__status="running")
        .exclude(job=job)
        .order_by("job_id")
        .values_list("node_id", "job__name", "job_id")
    ):
        running.setdefault(node_id, []).append(f"{name} (#{pk})")
    parts = []
    for node in strangers[:20]:
        others = running.get(node.pk)
        parts.append(
            f"{node.hostname} runs {', '.join(others)}"
            if others
            else f"{node.hostname} runs no other job"
        )
    more = f" and {len(strangers) - 20} more" if len(strangers) > 20 else ""
    return (
        f"not nodes of job {job.name} (#{job.pk}): {'; '.join(parts)}{more}. "
        "Name only the job's nodes, or file the other job's failure against that job."
    )
