"""Fleet pages: the nodes list, a node's page and its state, a cluster's automation."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, pgettext_lazy
from django.views.decorators.http import require_POST

from apps.accounts.choices import OPERATORS
from apps.accounts.permissions import role_required, user_has_role
from apps.common import panels
from apps.common.dbconflicts import atomic_with_retry
from apps.common.errors import errors_text
from apps.common.listing import list_page
from apps.fleet.choices import OUT_OF_SERVICE, NodeState, StateSource
from apps.fleet.filters import NodeFilter
from apps.fleet.models import Cluster, Node
from apps.fleet.page_cluster import cluster_remember
from apps.fleet.readers import open_incidents_of
from apps.fleet.selectors import (
    node_detail,
    node_list,
    node_state_history,
    rack_list,
)
from apps.fleet.services import cluster_automation_set, node_set_state
from apps.fleet.vendors import common_vendor, link_word, vendor_of


@role_required()
def node_list_page(request: HttpRequest) -> HttpResponse:
    """All nodes, filterable by cluster/state/rack/host, sortable, paginated; a cluster
    chosen here is remembered for the per-cluster pages (docs/pages.md)."""
    cluster_remember(request, request.GET.get("cluster", ""))
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


def gpu_kinds(node: Node) -> list[tuple[str, str, int]]:
    """(vendor, model, how many) of a node's GPUs, a blank model read as the cluster's, each
    model by its one name (docs/pages.md, One name per model)."""
    counts: dict[tuple[str, str], int] = {}
    for vendor, model in node.gpus.values_list("vendor", "model"):
        model = node.cluster.model_of(model)
        key = (vendor_of(vendor, model), model)
        counts[key] = counts.get(key, 0) + 1
    return [(v, m, n) for (v, m), n in sorted(counts.items())]


@role_required()
def node_detail_page(request: HttpRequest, hostname: str) -> HttpResponse:
    """A node: the open incidents naming it, state history, jobs; the panels the apps above
    the fleet lend — under its heading its maintenance windows and its repair, among its
    facts the node in Slurm, in its body its GPUs' latest values, checks and charts, below
    its history what was sent to Slurm, at its foot its GPU events."""
    node = node_detail(hostname=hostname)
    if node is None:
        raise Http404(f"no node {hostname}")
    kinds = gpu_kinds(node)
    return render(
        request,
        "fleet/node_detail.html",
        {
            "node": node,
            "gpu_kinds": kinds,
            "link": link_word(common_vendor([v for v, _, _ in kinds])),
            "panels": panels.render(slot=panels.NODE, request=request, node=node),
            "body_panels": panels.render(
                slot=panels.NODE_BODY, request=request, node=node, params=request.GET
            ),
            "foot_panels": panels.render(slot=panels.NODE_FOOT, request=request, node=node),
            "panel_facts": panels.render(slot=panels.NODE_FACTS, request=request, node=node),
            "panels_below": panels.render(slot=panels.NODE_BELOW, request=request, node=node),
            "open_incidents": open_incidents_of([node.pk]).get(node.pk, []),
            "history": node_state_history(node=node),
            "now": timezone.now(),
            "can_set_state": user_has_role(request.user, OPERATORS),
            "state_form": NodeStateForm(),  # opens on "— no change —"
        },
    )


def slurm_told(cluster: Cluster) -> str:
    """Whether a drain set in KUAE now reaches the cluster's Slurm (`Cluster.slurm_told`)."""
    return cluster.slurm_told()


# A state as a word in a sentence ("gpu005 is now drained."), in the page's language.
STATE_WORDS = {
    "healthy": pgettext_lazy("node state in a sentence", "healthy"),
    "suspect": pgettext_lazy("node state in a sentence", "suspect"),
    "drained": pgettext_lazy("node state in a sentence", "drained"),
    "down": pgettext_lazy("node state in a sentence", "down"),
    "maintenance": pgettext_lazy("node state in a sentence", "in maintenance"),
}


class NodeStateForm(forms.Form):
    """An operator drains, returns or marks a node; the reason is required. The control opens
    on "— no change —" (an empty choice): submitting it as it opened changes nothing."""

    state = forms.ChoiceField(
        label=gettext_lazy("State"),
        choices=[("", gettext_lazy("— no change —")), *NodeState.choices],
        required=False,
    )
    reason = forms.CharField(label=gettext_lazy("Reason"), max_length=500, required=False)

    def clean(self) -> dict[str, object]:
        """A state needs its reason; no change needs none."""
        data = super().clean() or {}
        if data.get("state") and not data.get("reason"):
            self.add_error("reason", _("Say why (the history keeps it)."))
        return data


@require_POST
@role_required(OPERATORS)
def node_state_page(request: HttpRequest, hostname: str) -> HttpResponse:
    """Set the node's state from its page (history records who and why)."""
    node = get_object_or_404(Node, hostname=hostname)
    form = NodeStateForm(request.POST)
    if form.is_valid() and not form.cleaned_data["state"]:
        messages.info(
            request,
            _("Nothing changed: %(host)s stays %(state)s.")
            % {"host": hostname, "state": node.get_state_display()},
        )
    elif form.is_valid():
        stopping = form.cleaned_data["state"] in OUT_OF_SERVICE and not request.POST.get("confirm")
        running = (
            list(node.jobs.filter(status="running").order_by("-gpu_count")) if stopping else []
        )
        drain = form.cleaned_data["state"] == "drained"
        if running:  # taking a node out under a job stops the job: say which, ask first
            return render(
                request,
                "fleet/node_state_confirm.html",
                {
                    "node": node,
                    "form": form,
                    "jobs": running,
                    "gpus": sum(j.gpu_count for j in running),
                    "names": ", ".join(j.name for j in running),
                    "slurm": slurm_told(node.cluster),
                    "verb": _("drain") if drain else _("mark down"),
                    "done": STATE_WORDS[form.cleaned_data["state"]],
                },
            )
        atomic_with_retry(node_set_state)(
            node=node,
            state=form.cleaned_data["state"],
            reason=form.cleaned_data["reason"],
            source=StateSource.USER,
            by=request.user.get_username(),
        )
        messages.success(
            request,
            _("%(host)s is now %(state)s.")
            % {"host": hostname, "state": STATE_WORDS[form.cleaned_data["state"]]},
        )
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
        messages.error(request, _("Say why automation is paused."))
    else:
        cluster_automation_set(
            cluster=cluster, paused=paused, reason=reason, by=request.user.get_username()
        )
    return redirect(f"{reverse('overview')}?cluster={cluster.name}")
