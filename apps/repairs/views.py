"""Repairs pages: the board operators work from (open, in burn-in, recently closed), one
repair's page, adding a step, returning the node."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from apps.accounts.choices import ENGINEERS, OPERATORS
from apps.accounts.permissions import role_required
from apps.common.errors import errors_text
from apps.fleet.models import Cluster
from apps.repairs.forms import ReturnForm, StepForm
from apps.repairs.models import Repair
from apps.repairs.selectors import board, repair_counts, repair_list
from apps.repairs.services import Step, node_return, step_add


def _roles(request: HttpRequest) -> dict[str, bool]:
    user = request.user
    return {
        "operator": user.has_role(OPERATORS),  # type: ignore[union-attr]
        "engineer": user.has_role(ENGINEERS),  # type: ignore[union-attr]
    }


@role_required()
def repairs_page(request: HttpRequest) -> HttpResponse:
    """Open repairs (oldest first, after the drains whose repair is being opened), repairs
    in burn-in, and those closed in the last week. It reads only: the beat opens repairs
    (docs/repairs.md)."""
    cluster = request.GET.get("cluster", "")
    b = board(cluster=cluster)
    live = b.open + b.burn_in
    counts = repair_counts([r.node_id for r in live])
    for r in live:
        r.recent_repairs = counts.get(r.node_id, 0)  # type: ignore[attr-defined]
    return render(
        request,
        "repairs/board.html",
        {
            "board": b,
            "now": timezone.now(),
            "cluster": cluster,
            "clusters": Cluster.objects.order_by("name").values_list("name", flat=True),
            "step_form": StepForm(),
            "sync_s": settings.KUAE_REPAIRS_SYNC_S,
            **_roles(request),
        },
    )


@role_required()
def repair_page(request: HttpRequest, pk: int) -> HttpResponse:
    """One repair: the node, why it went out, the steps, the return."""
    repair = repair_list().filter(pk=pk).first()
    if repair is None:
        raise Http404(f"no repair {pk}")
    repair.recent_repairs = repair_counts([repair.node_id]).get(repair.node_id, 0)  # type: ignore[attr-defined]
    return render(
        request,
        "repairs/repair_detail.html",
        {"r": repair, "now": timezone.now(), "step_form": StepForm(), **_roles(request)},
    )


def _back(request: HttpRequest, repair: Repair) -> HttpResponse:
    if request.POST.get("next") == "board":
        return redirect(f"/repairs/#repair-{repair.pk}")
    return redirect("repair-detail", pk=repair.pk)


@require_POST
@role_required(ENGINEERS)
def repair_step_page(request: HttpRequest, pk: int) -> HttpResponse:
    """Add a step to the repair."""
    repair = Repair.objects.filter(pk=pk).first()
    if repair is None:
        raise Http404(f"no repair {pk}")
    form = StepForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Step not added: %(why)s") % {"why": errors_text(form.errors)})
        return _back(request, repair)
    data = form.cleaned_data
    step_add(
        repair=repair,
        step=Step(action=data["action"], note=data["note"], ticket=data["ticket"]),
        by=request.user.get_username(),
    )
    messages.success(request, _("Step added to repair #%(pk)s") % {"pk": pk})
    return _back(request, repair)


@require_POST
@role_required(OPERATORS)
def repair_return_page(request: HttpRequest, pk: int) -> HttpResponse:
    """Return the repair's node: to burn-in, or (engineers, skip ticked) healthy at once."""
    repair = Repair.objects.select_related("node").filter(pk=pk).first()
    if repair is None:
        raise Http404(f"no repair {pk}")
    form = ReturnForm(request.POST)
    skip = form.is_valid() and form.cleaned_data["skip_burn_in"]
    if skip and not request.user.has_role(ENGINEERS):  # type: ignore[union-attr]
        messages.error(request, _("Only an engineer may skip the burn-in"))
        return _back(request, repair)
    try:
        repair = node_return(node=repair.node, by=request.user.get_username(), skip_burn_in=skip)
    except ValidationError as exc:
        messages.error(request, errors_text(exc.message_dict))
        return _back(request, repair)
    if skip:
        messages.success(
            request,
            _("%(node)s returned to service without burn-in") % {"node": repair.node.hostname},
        )
    else:
        messages.success(
            request,
            _("%(node)s is in burn-in: it stays out until its GPUs report a passing GEMM probe")
            % {"node": repair.node.hostname},
        )
    return _back(request, repair)
