"""Postmortem writes: save a draft, submit, approve or reject (never your own), tick off
action items.

The two-person rule: the author is who wrote it — whoever last changed its content (a save
that changes nothing changes no author) — and submitting does not make anyone its author.
Approval or rejection needs an engineer who changed none of its content (`editors`): an
engineer who edits someone else's draft has written part of it and leaves review to a third.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from apps.accounts.choices import ENGINEERS
from apps.accounts.models import User
from apps.incidents.choices import IncidentStatus
from apps.incidents.models import ActionItem, Incident, Postmortem, TimelineEntry
from apps.incidents.services import incident_note

Status = Postmortem.Status

# A postmortem is approved only once its incident is over: while it is open its impact and
# cost still grow, so what is approved would not be the final account.
APPROVABLE_INCIDENT = (IncidentStatus.RESOLVED, IncidentStatus.CLOSED)


def approval_waits_for(incident: Incident, *, shown: bool = False) -> str:
    """Why the incident's postmortem cannot be approved yet; "" when it can. In English (an
    API refusal) unless `shown` (the page's language)."""
    if incident.status in APPROVABLE_INCIDENT:
        return ""
    if shown:
        return _(
            "the incident is %(status)s: approve its postmortem once it is resolved or "
            "closed (until then its impact and cost still grow)"
        ) % {"status": str(incident.get_status_display()).lower()}
    return (
        f"the incident is {incident.status}: approve its postmortem once "
        "it is resolved or closed (until then its impact and cost still grow)"
    )


@dataclass(frozen=True)
class ActionSpec:
    """An action item as written: owner is a username."""

    text: str
    owner: str
    due: dt.date | None = None
    done: bool = False


@transaction.atomic
def postmortem_save(
    *,
    incident: Incident,
    by: User,
    summary: str,
    root_cause: str,
    category: str,
    timeline: list[dict],
    contributing_factors: str,
    action_items: Sequence[ActionSpec],
) -> Postmortem:
    """Write the draft (or create it). Only a draft can be edited: a reviewer rejects it back."""
    postmortem, _ = Postmortem.objects.select_for_update().get_or_create(incident=incident)
    before = _content(postmortem)
    if postmortem.status != Status.DRAFT:
        raise ValidationError(
            {"status": [f"the postmortem is {postmortem.status}; only a draft is edited"]}
        )
    owners = {
        u.username: u for u in User.objects.filter(username__in={a.owner for a in action_items})
    }
    missing = {
        f"action_items[{i}].owner": [f"no user {a.owner!r}"]
        for i, a in enumerate(action_items)
        if a.owner not in owners
    }
    if missing:
        raise ValidationError(missing)
    postmortem.summary, postmortem.root_cause, postmortem.category = summary, root_cause, category
    postmortem.timeline, postmortem.contributing_factors = timeline, contributing_factors
    postmortem.save()
    postmortem.action_items.all().delete()
    ActionItem.objects.bulk_create(
        [
            ActionItem(
                postmortem=postmortem, text=a.text, owner=owners[a.owner], due=a.due, done=a.done
            )
            for a in action_items
        ]
    )
    if _content(postmortem) != before:
        postmortem.author = by
        postmortem.save(update_fields=["author"])
        postmortem.editors.add(by)
    return postmortem


def _content(postmortem: Postmortem) -> tuple[object, ...]:
    """What its author wrote, to tell a change from a save of the same text (`done` on an
    action item is progress, not content)."""
    items = (
        tuple(postmortem.action_items.order_by("pk").values_list("text", "owner_id", "due"))
        if postmortem.pk
        else ()
    )
    return (
        postmortem.summary,
        postmortem.root_cause,
        postmortem.category,
        postmortem.timeline,
        postmortem.contributing_factors,
        items,
    )


def _move(postmortem: Postmortem, *, by: User, to: str, note: str) -> Postmortem:
    postmortem.status = to
    postmortem.save()
    incident_note(
        incident=postmortem.incident, kind=TimelineEntry.Kind.NOTE, actor=by.username, text=note
    )
    return postmortem


@transaction.atomic
def postmortem_submit(*, postmortem: Postmortem, by: User, comment: str = "") -> Postmortem:
    """An engineer submits the draft for review; its author stays who wrote it."""
    if postmortem.status != Status.DRAFT:
        raise ValidationError(
            {"status": [f"only a draft is submitted (it is {postmortem.status})"]}
        )
    if postmortem.author_id is None:
        raise ValidationError({"status": ["nothing is written yet: save the draft first"]})
    postmortem.reviewer, postmortem.review_comment = None, ""
    return _move(
        postmortem,
        by=by,
        to=Status.IN_REVIEW,
        note="postmortem submitted for review" + (f": {comment}" if comment else ""),
    )


def _review(postmortem: Postmortem, *, by: User, comment: str, to: str, said: str) -> Postmortem:
    """An engineer who wrote none of it reviews a postmortem in review; approves it only once
    its incident is over."""
    if postmortem.status != Status.IN_REVIEW:
        raise ValidationError(
            {"status": [f"only a postmortem in review is reviewed (it is {postmortem.status})"]}
        )
    if postmortem.author_id == by.pk:
        raise PermissionDenied("the author cannot review their own postmortem")
    if not postmortem.reviewable_by(by.pk):
        raise PermissionDenied("an engineer who edited the postmortem cannot review it")
    waits = approval_waits_for(postmortem.incident) if to == Status.APPROVED else ""
    if waits:
        raise ValidationError({"incident_status": [waits]})
    postmortem.reviewer, postmortem.review_comment = by, comment
    return _move(postmortem, by=by, to=to, note=said + (f": {comment}" if comment else ""))


@transaction.atomic
def postmortem_approve(*, postmortem: Postmortem, by: User, comment: str = "") -> Postmortem:
    """Another engineer approves it, once its incident is resolved or closed (else 400 naming
    `incident_status`)."""
    return _review(
        postmortem, by=by, comment=comment, to=Status.APPROVED, said="postmortem approved"
    )


@transaction.atomic
def postmortem_reject(*, postmortem: Postmortem, by: User, comment: str = "") -> Postmortem:
    """Another engineer sends it back to draft with a comment."""
    return _review(
        postmortem, by=by, comment=comment, to=Status.DRAFT, said="postmortem sent back to draft"
    )


@transaction.atomic
def action_item_set_done(*, item: ActionItem, by: User, done: bool) -> ActionItem:
    """Tick an action item off (or reopen it): its owner or an engineer, at any stage of the
    postmortem; the incident's timeline records it."""
    if item.owner_id != by.pk and not by.has_role(ENGINEERS):
        raise PermissionDenied("only the owner or an engineer ticks an action item")
    if item.done == done:
        return item
    item.done = done
    item.save(update_fields=["done"])
    incident_note(
        incident=item.postmortem.incident,
        kind=TimelineEntry.Kind.NOTE,
        actor=by.username,
        text=f"action item {'done' if done else 'reopened'}: {item.text}",
    )
    return item
