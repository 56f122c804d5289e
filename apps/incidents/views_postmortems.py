"""Postmortem pages: the editor (engineers, drafts only), review (another engineer), and the
action items list with the overdue ones first."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from apps.accounts.choices import ENGINEERS
from apps.accounts.models import User
from apps.accounts.permissions import acting_user, role_required, user_has_role
from apps.common.errors import errors_text
from apps.common.timeutil import parse_ts
from apps.incidents.costs import costs_at
from apps.incidents.forms import (
    ActionFormSet,
    PostmortemForm,
    ReviewForm,
    TimelineFormSet,
    unjudged,
    with_added_row,
)
from apps.incidents.models import ActionItem, Incident, Postmortem
from apps.incidents.postmortems import (
    ActionSpec,
    action_item_set_done,
    approval_waits_for,
    postmortem_approve,
    postmortem_reject,
    postmortem_save,
    postmortem_submit,
)
from apps.incidents.selectors import action_items, time_marks

STEPS = {"submit": postmortem_submit, "approve": postmortem_approve, "reject": postmortem_reject}
ROWS = {"tl": TimelineFormSet, "ai": ActionFormSet}  # the editor's formsets, by prefix
ITEM_STATES = ("open", "overdue", "done", "all")
# What the action items page calls each state (the values stay the query's words).
ITEM_STATE_LABELS = {
    "open": gettext_lazy("open"),
    "overdue": gettext_lazy("overdue"),
    "done": gettext_lazy("done"),
    "all": gettext_lazy("all"),
}


def _initial(incident: Incident, postmortem: Postmortem | None) -> dict[str, Any]:
    """Forms' starting values: the saved draft, or for a new one the incident's own times."""
    if postmortem is None:
        return {
            "form": {"category": incident.category, "summary": incident.description},
            "timeline": [
                {"at": m.at.replace(microsecond=0), "text": m.label} for m in time_marks(incident)
            ],
            "actions": [],
        }
    return {
        "form": {
            f: getattr(postmortem, f)
            for f in ("summary", "root_cause", "category", "contributing_factors")
        },
        "timeline": [{"at": parse_ts(t["at"]), "text": t["text"]} for t in postmortem.timeline],
        "actions": [
            {"text": a.text, "owner": a.owner.username, "due": a.due, "done": a.done}
            for a in postmortem.action_items.select_related("owner")
        ],
    }


def _kept(formset: Any) -> list[dict[str, Any]]:
    """The filled rows of a formset that are not marked for deletion."""
    return [
        f.cleaned_data for f in formset.forms if f.cleaned_data and not f.cleaned_data.get("DELETE")
    ]


def error_summary(
    form: forms.Form, timeline: forms.BaseFormSet, actions: forms.BaseFormSet
) -> list[tuple[str, str]]:
    """Every refusal of a postmortem save as (the field's id, "Label: message"), in page
    order, for the error summary at the top of the form (docs/pages.md, Words a person uses):
    a refused row far below the fold is named where the person is looking."""
    out: list[tuple[str, str]] = [("", str(e)) for e in form.non_field_errors()]
    for field in form:
        out += [
            (field.id_for_label, _("%(field)s: %(error)s") % {"field": field.label, "error": e})
            for e in field.errors
        ]
    titles = [
        (_("Timeline"), _("Timeline entries"), timeline),
        (_("Action item"), _("Action items"), actions),
    ]
    for title, plural, formset in titles:
        out += [
            (f"{formset.prefix}-rows", _("%(rows)s: %(error)s") % {"rows": plural, "error": e})
            for e in formset.non_form_errors()
        ]
        for row, sub in enumerate(formset.forms, start=1):
            for field in sub:
                out += [
                    (
                        field.id_for_label,
                        _("%(title)s %(row)s, %(field)s: %(error)s")
                        % {"title": title, "row": row, "field": field.label.lower(), "error": e},
                    )
                    for e in field.errors
                ]
    return out


@role_required()
def postmortem_page(request: HttpRequest, pk: int) -> HttpResponse:
    """Read the postmortem; engineers edit a draft here (POST saves it, `then=submit` also
    submits it for review; `add_row=tl|ai` saves nothing and draws the editor again, as
    typed, with one more timeline or action-item row — the Add buttons without JavaScript)."""
    user = acting_user(request)
    if request.method == "POST" and not user.has_role(ENGINEERS):
        raise PermissionDenied("only engineers write postmortems")
    incident = get_object_or_404(Incident.objects.select_related("cluster", "job"), pk=pk)
    costs_at([incident], now=timezone.now())
    postmortem = (
        Postmortem.objects.filter(incident=incident).select_related("author", "reviewer").first()
    )
    engineer = user.has_role(ENGINEERS)
    editable = engineer and (postmortem is None or postmortem.status == Postmortem.Status.DRAFT)
    initial = _initial(incident, postmortem)
    form = PostmortemForm(initial=initial["form"])
    timeline = TimelineFormSet(initial=initial["timeline"], prefix="tl")
    actions = ActionFormSet(initial=initial["actions"], prefix="ai")
    status = 200
    if request.method == "POST":
        if not editable:
            raise PermissionDenied("only engineers edit, and only a draft")
        data: QueryDict = request.POST
        adding = request.POST.get("add_row")
        if adding in ROWS:
            more = with_added_row(data, adding, max_rows=ROWS[adding].max_num)
            if more is None:
                adding = None  # not a row count: refused below, as a save would be
            else:
                data = more
        form = PostmortemForm(data)
        timeline = TimelineFormSet(data, prefix="tl")
        # The saved rows as initial: a due date already there may stay past (clean_due).
        actions = ActionFormSet(data, initial=initial["actions"], prefix="ai")
        if adding in ROWS:
            for part in (form, timeline, actions):
                unjudged(part)
            status = 200
        elif form.is_valid() and timeline.is_valid() and actions.is_valid():
            try:
                postmortem = postmortem_save(
                    incident=incident,
                    by=user,
                    **form.cleaned_data,
                    timeline=[
                        {"at": r["at"].replace(microsecond=0).isoformat(), "text": r["text"]}
                        for r in sorted(_kept(timeline), key=lambda r: r["at"])
                    ],
                    action_items=[
                        ActionSpec(r["text"], r["owner"].username, r["due"], r["done"])
                        for r in _kept(actions)
                    ],
                )
                if request.POST.get("then") == "submit":
                    postmortem_submit(postmortem=postmortem, by=user)
                    messages.success(request, _("Saved and submitted for review."))
                else:
                    messages.success(request, _("Draft saved."))
                return redirect("postmortem", pk=pk)
            except ValidationError as exc:
                messages.error(request, errors_text(exc.message_dict))
            status = 400
        else:
            status = 400
    return render(
        request,
        "incidents/postmortem.html",
        {
            "incident": incident,
            "postmortem": postmortem,
            "editable": editable,
            "form": form,
            "error_summary": error_summary(form, timeline, actions) if status == 400 else [],
            "timeline": timeline,
            "actions": actions,
            "items": list(postmortem.action_items.select_related("owner")) if postmortem else [],
            "entries": initial["timeline"] if postmortem else [],
            "engineer": engineer,
            "can_review": engineer
            and postmortem is not None
            and postmortem.status == Postmortem.Status.IN_REVIEW
            and postmortem.reviewable_by(user.pk),
            "review_form": ReviewForm(),
            "approval_waits": approval_waits_for(incident, shown=True),
            "today": timezone.now().date(),
        },
        status=status,
    )


@require_POST
@role_required(ENGINEERS)
def postmortem_step(request: HttpRequest, pk: int, step: str) -> HttpResponse:
    """Submit, approve or reject with an optional comment; nobody who wrote it reviews it
    (403)."""
    if step not in STEPS:
        raise Http404(step)
    postmortem = get_object_or_404(Postmortem.objects.select_related("author"), incident_id=pk)
    form = ReviewForm(request.POST)
    comment = form.cleaned_data["comment"] if form.is_valid() else ""
    try:
        STEPS[step](postmortem=postmortem, by=acting_user(request), comment=comment)
        messages.success(
            request,
            {
                "submit": _("Submitted for review."),
                "approve": _("Approved."),
                "reject": _("Sent back to draft."),
            }[step],
        )
    except ValidationError as exc:
        messages.error(request, errors_text(exc.message_dict))
    return redirect("postmortem", pk=pk)


@role_required()
def action_items_page(request: HttpRequest) -> HttpResponse:
    """Every postmortem's action items: open (overdue first), overdue, done or all; by owner."""
    state = request.GET.get("state", "open")
    state = state if state in ITEM_STATES else "open"
    owner = request.GET.get("owner", "")
    page = Paginator(action_items(state=state, owner=owner), 100).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "incidents/action_items.html",
        {
            "page": page,
            "state": state,
            "states": list(ITEM_STATE_LABELS.items()),
            "state_label": ITEM_STATE_LABELS[state],
            "owner": owner,
            "owners": User.objects.filter(action_items__isnull=False)
            .distinct()
            .order_by("username")
            .values_list("username", flat=True),
            "query": query.urlencode(),
            "today": timezone.now().date(),
            "engineer": user_has_role(request.user, ENGINEERS),
        },
    )


@require_POST
@role_required()
def action_item_done(request: HttpRequest, item_id: int) -> HttpResponse:
    """Tick an action item off or reopen it: its owner or an engineer (else 403)."""
    item = get_object_or_404(ActionItem.objects.select_related("postmortem__incident"), pk=item_id)
    action_item_set_done(item=item, by=acting_user(request), done=request.POST.get("done") == "1")
    back = request.POST.get("next", "")
    safe = url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()})
    return redirect(back if back and safe else "action-items")
