"""Maintenance pages: the calendar of windows with the booking form, one window's page."""

from __future__ import annotations

import datetime as dt

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from apps.accounts.choices import OPERATORS
from apps.accounts.permissions import role_required
from apps.common.dbconflicts import atomic_with_retry
from apps.common.errors import add_form_errors
from apps.fleet.models import Cluster
from apps.maintenance.forms import WindowForm
from apps.maintenance.models import MaintenanceWindow
from apps.maintenance.selectors import (
    TouchedJob,
    calendar,
    jobs_touched,
    planned_without_window,
    touched_key,
    window_detail,
)
from apps.maintenance.services import Booking, window_book, window_end, window_nodes_resolve

SPAN = dt.timedelta(days=7)  # the calendar strip: now to a week ahead


def _strip(windows: list[MaintenanceWindow], now: dt.datetime) -> list[dict[str, object]]:
    """Bars on the week-ahead strip: each window's offset and width in percent."""
    bars = []
    for w in windows:
        start, end = max(w.start, now), min(w.end, now + SPAN)
        if end <= start:
            continue
        bars.append(
            {
                "window": w,
                "left": round((start - now) / SPAN * 100, 2),
                "width": max(round((end - start) / SPAN * 100, 2), 0.6),
            }
        )
    return bars


@role_required()
def calendar_page(request: HttpRequest) -> HttpResponse:
    """Windows in progress and upcoming on a week-ahead strip and in tables, past ones
    collapsed; operators book one with the form (start defaults to now)."""
    now = timezone.now()
    cluster = request.GET.get("cluster", "")
    operator = request.user.has_role(OPERATORS)  # type: ignore[union-attr]
    form = None
    touched: list[TouchedJob] = []
    confirming = False
    if operator:
        form = WindowForm(request.POST or None, initial={"cluster": cluster} if cluster else None)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            booking = Booking(
                cluster=data["cluster"],
                start=data["start"],
                end=data["end"],
                reason=data["reason"],
                nodes=data["nodes"].strip() or None,
                racks=data["racks"],
            )
            try:
                nodes = window_nodes_resolve(
                    cluster=booking.cluster, nodes=booking.nodes, racks=booking.racks
                )
                touched = jobs_touched(nodes)
                # Stopping running jobs is said first, by name and GPUs, and booked only
                # once the operator confirms those very jobs (docs/maintenance.md, Booking).
                confirming = bool(touched) and request.POST.get("confirm") != touched_key(touched)
                if not confirming:
                    window = atomic_with_retry(window_book)(
                        booking=booking, by=request.user.get_username()
                    )
            except ValidationError as exc:
                add_form_errors(form, exc)
                touched = []
            else:
                if not confirming:
                    messages.success(
                        request,
                        _("Maintenance window #%(pk)s booked on %(n)s nodes")
                        % {"pk": window.pk, "n": window.nodes.count()},
                    )
                    return redirect("maintenance-detail", pk=window.pk)
    elif request.method == "POST":
        raise PermissionDenied("only operators book maintenance windows")
    slurm = form.cleaned_data["cluster"].slurm_told() if confirming and form is not None else ""
    cal = calendar(now=now, cluster=cluster)
    days = [now + dt.timedelta(days=i) for i in range(7)]
    return render(
        request,
        "maintenance/calendar.html",
        {
            "now": now,
            "cal": cal,
            "bars": _strip(cal.current + cal.upcoming, now),
            "days": days,
            "form": form,
            "touched": touched,
            "touched_gpus": sum(t.gpus for t in touched),
            "confirm_key": touched_key(touched) if confirming else "",
            # What the window does to those jobs, actuation as it is (docs/maintenance.md)
            "slurm": slurm,
            "past_total": cal.past_total,
            "planned_without_window": planned_without_window(cluster=cluster),
            "cluster": cluster,
            "clusters": Cluster.objects.order_by("name").values_list("name", flat=True),
        },
        status=400 if request.method == "POST" and not confirming else 200,
    )


@role_required()
def window_page(request: HttpRequest, pk: int) -> HttpResponse:
    """One window: its times, nodes, the alerts it silenced, and (operators) end it now."""
    try:
        window = window_detail(pk)
    except MaintenanceWindow.DoesNotExist:
        raise Http404(f"no maintenance window {pk}") from None
    now = timezone.now()
    return render(
        request,
        "maintenance/window_detail.html",
        {
            "w": window,
            "now": now,
            "in_progress": window.covers(now),
            "silenced": list(window.silenced_alerts.select_related("node")[:500]),
            "operator": request.user.has_role(OPERATORS),  # type: ignore[union-attr]
        },
    )


@require_POST
@role_required(OPERATORS)
def window_end_page(request: HttpRequest, pk: int) -> HttpResponse:
    """End a window now, or cancel one not begun."""
    window = MaintenanceWindow.objects.filter(pk=pk).first()
    if window is None:
        raise Http404(f"no maintenance window {pk}")
    window = atomic_with_retry(window_end)(window=window, by=request.user.get_username())
    if window.status == "cancelled":
        said = _("Maintenance window #%(pk)s cancelled") % {"pk": pk}
    else:
        said = _("Maintenance window #%(pk)s ended: its nodes are given back") % {"pk": pk}
    messages.success(request, said)
    return redirect("maintenance-detail", pk=pk)
