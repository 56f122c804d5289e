"""Fleet pages: the nodes list, a node's page and its telemetry chart."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from apps.accounts.choices import OPERATORS
from apps.accounts.permissions import acting_user, role_required
from apps.common.errors import errors_text
from apps.common.listing import list_page
from apps.fleet.charts import node_telemetry_figure
from apps.fleet.choices import OUT_OF_SERVICE, NodeState, StateSource
from apps.fleet.filters import NodeFilter
from apps.fleet.gpu_charts import gpu_history_figure, message_figure
from apps.fleet.gpu_history import RANGES, Window, node_gpu_history, window_from
from apps.fleet.models import Cluster, Node
from apps.fleet.monitored import reporting_gaps
from apps.fleet.readers import open_incidents_of
from apps.fleet.selectors import (
    node_actuations,
    node_detail,
    node_event_rows,
    node_get,
    node_list,
    node_state_history,
    rack_list,
)
from apps.fleet.services import cluster_automation_set, node_set_state
from apps.fleet.telemetry import GPU_COLUMNS


@role_required()
def node_list_page(request: HttpRequest) -> HttpResponse:
    """All nodes, filterable by cluster/state/rack/host, sortable, paginated."""
    listing = list_page(request, NodeFilter(request.GET, queryset=node_list()))
    return render(
        request,
        "fleet/node_list.html",
        {
            **listing,
            "states": list(NodeState),
            "selected_states": request.GET.getlist("state"),
            "racks": rack_list(cluster=request.GET.get("cluster")),
            "clusters": Cluster.objects.values_list("name", flat=True),
            "now": timezone.now(),
        },
    )


@role_required()
def node_detail_page(request: HttpRequest, hostname: str) -> HttpResponse:
    """A node: the open incidents naming it, its GPUs' latest values, state history, jobs."""
    node = node_detail(hostname=hostname)
    if node is None:
        raise Http404(f"no node {hostname}")
    gpus = list(node.gpus.all())
    gaps, silent = reporting_gaps((g.index, g.metrics) for g in gpus)
    window, window_problem = window_from(request.GET, now=timezone.now())
    return render(
        request,
        "fleet/node_detail.html",
        {
            "node": node,
            "open_incidents": open_incidents_of([node.pk]).get(node.pk, []),
            "gpus": gpus,
            "gpu_columns": GPU_COLUMNS,
            "history": node_state_history(node=node),
            "actuations": node_actuations(node=node),
            "events": node_event_rows(node=node),
            "gaps": gaps,
            "silent_gpus": silent,
            "window": window,
            "window_problem": window_problem,
            "window_query": _window_query(window),
            "ranges": [(key, label) for key, (label, _) in RANGES.items()],
            "now": timezone.now(),
            "can_set_state": acting_user(request).has_role(OPERATORS),
            "state_form": NodeStateForm(
                initial={"state": "drained" if node.state in ("healthy", "suspect") else "healthy"}
            ),
        },
    )


class NodeStateForm(forms.Form):
    """An operator drains, returns or marks a node; the reason is required."""

    state = forms.ChoiceField(choices=NodeState.choices)
    reason = forms.CharField(max_length=500)


@require_POST
@role_required(OPERATORS)
def node_state_page(request: HttpRequest, hostname: str) -> HttpResponse:
    """Set the node's state from its page (history records who and why)."""
    node = get_object_or_404(Node, hostname=hostname)
    form = NodeStateForm(request.POST)
    if form.is_valid():
        stopping = form.cleaned_data["state"] in OUT_OF_SERVICE and not request.POST.get("confirm")
        running = (
            list(node.jobs.filter(status="running").order_by("-gpu_count")) if stopping else []
        )
        if running:  # taking a node out under a job stops the job: say which, ask first
            return render(
                request,
                "fleet/node_state_confirm.html",
                {
                    "node": node,
                    "form": form,
                    "jobs": running,
                    "verb": "drain" if form.cleaned_data["state"] == "drained" else "mark down",
                },
            )
        node_set_state(
            node=node,
            state=form.cleaned_data["state"],
            reason=form.cleaned_data["reason"],
            source=StateSource.USER,
            by=request.user.get_username(),
        )
        messages.success(request, f"{hostname} is now {form.cleaned_data['state']}.")
    else:
        messages.error(request, errors_text(form.errors, form))
    return redirect("node-detail", hostname=hostname)


@require_POST
@role_required(OPERATORS)
def cluster_automation_page(request: HttpRequest, name: str) -> HttpResponse:
    """Pause or resume a cluster's automation from the overview (docs/on-call.md, Pausing
    automation)."""
    cluster = get_object_or_404(Cluster, name=name)
    paused = request.POST.get("paused") == "true"
    reason = request.POST.get("reason", "").strip()[:300]
    if paused and not reason:
        messages.error(request, "Say why automation is paused.")
    else:
        cluster_automation_set(
            cluster=cluster, paused=paused, reason=reason, by=request.user.get_username()
        )
    return redirect(f"{reverse('overview')}?cluster={cluster.name}")


@role_required()
def node_telemetry_chart(request: HttpRequest, hostname: str) -> JsonResponse:
    """A node's telemetry rollups over the last 24 h as Plotly JSON (the node page polls it)."""
    node = node_get(hostname=hostname)
    if node is None:
        raise Http404(f"no node {hostname}")
    return JsonResponse(node_telemetry_figure(node=node))


def _window_query(window: Window) -> str:
    """The query string that asks the charts' endpoint for `window`."""
    if window.key != "custom":
        return urlencode({"range": window.key})
    fmt = "%Y-%m-%dT%H:%M:%S"
    return urlencode({"start": window.start.strftime(fmt), "end": window.end.strftime(fmt)})


@role_required()
def node_gpu_chart(request: HttpRequest, hostname: str) -> JsonResponse:
    """A node's per-GPU charts over `?range=` (1h … 30d) or `?start=&end=` as Plotly JSON:
    from the cluster's Prometheus, else from KUAE's rollups. A source that does not answer
    is a message figure (200), so the page shows why rather than a broken chart."""
    node = node_get(hostname=hostname)
    if node is None:
        raise Http404(f"no node {hostname}")
    window, problem = window_from(request.GET, now=timezone.now())
    if problem:
        return JsonResponse(message_figure(problem))
    return JsonResponse(gpu_history_figure(node_gpu_history(node=node, window=window)))
