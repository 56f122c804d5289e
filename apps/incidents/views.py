"""Incident pages: the list (filter, sort by cost) and an incident's page."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from apps.accounts.choices import ENGINEERS, OPERATORS
from apps.accounts.models import User
from apps.accounts.permissions import role_required, user_has_role
from apps.common.dbconflicts import atomic_with_retry
from apps.common.errors import add_form_errors, errors_text
from apps.common.listing import list_page
from apps.fleet.models import Cluster
from apps.incidents.choices import Category, IncidentStatus, Severity
from apps.incidents.costs import costs_at, with_cost_order
from apps.incidents.filters import IncidentFilter, UnroutedAlertFilter
from apps.incidents.forms import CommentForm, IncidentEditForm, IncidentFileForm
from apps.incidents.models import Incident, Postmortem, TimelineEntry, UnroutedAlert
from apps.incidents.selectors import (
    incident_list,
    overdue_count,
    road_back,
    road_summary,
    time_rows,
    unrouted_alerts,
    unrouted_firing_count,
)
from apps.incidents.services import TIMES, incident_note, incident_open, incident_update
from apps.incidents.services_owners import incident_acknowledge


@role_required()
def incident_list_page(request: HttpRequest) -> HttpResponse:
    """Incidents filterable by status, category, severity, node, job, time; sortable by
    cost. Costs are read at one instant: an open incident's run up to it."""
    now = timezone.now()
    incidents = with_cost_order(incident_list(), now=now)
    listing = list_page(request, IncidentFilter(request.GET, queryset=incidents), per_page=50)
    listing["page"].object_list = costs_at(listing["page"].object_list, now=now)
    return render(
        request,
        "incidents/incident_list.html",
        {
            **listing,
            "now": now,
            "statuses": list(IncidentStatus),
            "severities": list(Severity),
            "categories": Category.choices,
            "clusters": Cluster.objects.values_list("name", flat=True),
            "selected": {k: request.GET.getlist(k) for k in ("status", "severity", "category")},
            "overdue": overdue_count(),
            "unrouted": unrouted_firing_count(),
            "in_review": Postmortem.objects.filter(status=Postmortem.Status.IN_REVIEW).count(),
            "engineer": user_has_role(request.user, ENGINEERS),
        },
    )


@role_required()
def unrouted_alert_list_page(request: HttpRequest) -> HttpResponse:
    """Alertmanager alerts that named no known node or cluster, labels shown as sent."""
    status = request.GET.get("status", "")
    alerts = UnroutedAlertFilter(request.GET, queryset=unrouted_alerts())
    listing = list_page(request, alerts, per_page=50)
    return render(
        request,
        "incidents/unrouted_alerts.html",
        {
            **listing,
            "now": timezone.now(),
            "status": status,
            "statuses": list(UnroutedAlert.Status),
        },
    )


@role_required(ENGINEERS)
def incident_file_page(request: HttpRequest) -> HttpResponse:
    """Engineers file an incident by hand (times UTC; nodes as a hostlist)."""
    clusters = list(Cluster.objects.order_by("name").values_list("name", flat=True)[:2])
    form = IncidentFileForm(
        request.POST or None,
        initial={
            "cluster": request.GET.get("cluster") or (clusters[0] if len(clusters) == 1 else None),
        },
    )
    if request.method == "POST" and form.is_valid():
        try:
            incident = atomic_with_retry(incident_open)(
                **form.cleaned_data, actor=request.user.get_username()
            )
            messages.success(request, _("Incident filed."))
            return redirect("incident-detail", pk=incident.pk)
        except ValidationError as exc:
            add_form_errors(form, exc)
    status = 400 if request.method == "POST" else 200
    return render(request, "incidents/incident_new.html", {"form": form}, status=status)


@role_required()
def incident_detail_page(request: HttpRequest, pk: int) -> HttpResponse:
    """An incident: the road back as one line, its times, cost, nodes, job, timeline, postmortem."""
    incident = get_object_or_404(Incident.objects.select_related("cluster", "job"), pk=pk)
    now = timezone.now()
    costs_at([incident], now=now)
    postmortem = (
        Postmortem.objects.filter(incident=incident).select_related("author", "reviewer").first()
    )
    engineer = user_has_role(request.user, ENGINEERS)
    fields = ("status", "severity", "category", "description", *TIMES)
    initial = {f: getattr(incident, f) for f in fields}
    road = road_back(incident)
    return render(
        request,
        "incidents/incident_detail.html",
        {
            "incident": incident,
            "road": road,
            "road_label": road_summary(road),
            "time_rows": time_rows(incident),
            "now": now,
            "can_edit": user_has_role(request.user, OPERATORS),
            "engineer": engineer,
            "form": IncidentEditForm(initial=initial, engineer=engineer),
            "comment_form": CommentForm(),
            "people": assignable_people() if user_has_role(request.user, OPERATORS) else [],
            "nodes": list(incident.nodes.order_by("hostname").values_list("hostname", "state")),
            "timeline": list(incident.timeline.all()),
            "postmortem": postmortem,
            "actions": list(postmortem.action_items.select_related("owner")) if postmortem else [],
        },
    )


@require_POST
@role_required(OPERATORS)
def incident_ack(request: HttpRequest, pk: int) -> HttpResponse:
    """Acknowledge from the page: one click, one timeline line (none when already done)."""
    incident = get_object_or_404(Incident, pk=pk)
    if atomic_with_retry(incident_acknowledge)(
        incident=incident, actor=request.user.get_username()
    ):
        messages.success(request, _("Acknowledged #%(pk)s.") % {"pk": incident.pk})
    return redirect("incident-detail", pk=pk)


@require_POST
@role_required(OPERATORS)
def incident_take(request: HttpRequest, pk: int) -> HttpResponse:
    """Assign the incident: to the person named in `assignee` (one of `assignable_people`),
    else to the signed-in person ("Assign to me")."""
    get_object_or_404(Incident, pk=pk)
    wanted = request.POST.get("assignee", "").strip() or request.user.get_username()
    if wanted not in {u.username for u in assignable_people()}:
        messages.error(request, _("Assignee: %(who)s cannot take incidents.") % {"who": wanted})
        return redirect("incident-detail", pk=pk)
    atomic_with_retry(_update)(
        pk=pk, changes={"assignee": wanted}, actor=request.user.get_username()
    )
    return redirect("incident-detail", pk=pk)


def _update(*, pk: int, changes: dict[str, object], actor: str) -> Incident:
    """incident_update on the row as stored now: a retry (atomic_with_retry) starts afresh,
    since incident_update changes the object it is given."""
    return incident_update(
        incident=Incident.objects.get(pk=pk), changes=changes, actor=actor, by_person=True
    )


def assignable_people() -> list[User]:
    """Who may take an incident: active operators, engineers and admins, by username."""
    return list(User.objects.filter(is_active=True, role__in=OPERATORS).order_by("username"))


@require_POST
@role_required(OPERATORS)
def incident_edit(request: HttpRequest, pk: int) -> HttpResponse:
    """Save the edit form; every change lands in the timeline."""
    incident = get_object_or_404(Incident, pk=pk)
    form = IncidentEditForm(request.POST, engineer=user_has_role(request.user, ENGINEERS))
    if form.is_valid():
        try:
            atomic_with_retry(_update)(
                pk=incident.pk, changes=form.cleaned_data, actor=request.user.get_username()
            )
            messages.success(request, _("Saved."))
        except ValidationError as exc:
            messages.error(request, errors_text(exc.message_dict, form))
    else:
        messages.error(request, errors_text(form.errors, form))
    return redirect("incident-detail", pk=pk)


@require_POST
@role_required(OPERATORS)
def incident_comment(request: HttpRequest, pk: int) -> HttpResponse:
    """Add a comment to the timeline."""
    incident = get_object_or_404(Incident, pk=pk)
    form = CommentForm(request.POST)
    if form.is_valid():
        incident_note(
            incident=incident,
            kind=TimelineEntry.Kind.NOTE,
            actor=request.user.get_username(),
            text=form.cleaned_data["text"],
        )
    return redirect("incident-detail", pk=pk)
