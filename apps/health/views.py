"""Health pages: the cluster's checks, grid and results; evidence and suspects fragments."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_POST

from apps.accounts.choices import OPERATORS
from apps.accounts.permissions import role_required, user_has_role
from apps.fleet.choices import NodeState
from apps.fleet.models import Cluster, Node
from apps.fleet.page_cluster import page_cluster
from apps.health.checks import KIND_CHOICES, SCHEDULED_KINDS, kind_label
from apps.health.choices import ResultStatus
from apps.health.filters import ResultFilter
from apps.health.forms import ThresholdsForm
from apps.health.models import Thresholds
from apps.health.pipeline import pipeline_status_cached, unverified_words
from apps.health.selectors import (
    health_grid,
    kind_statuses,
    kinds_judged,
    node_evidence,
    results,
    summary,
)
from apps.health.services import runs_queue
from apps.health.suspects import job_suspects
from apps.jobs.models import Job


def _cluster(request: HttpRequest) -> Cluster | None:
    """`?cluster=` (remembered), else the last chosen, else the largest (docs/pages.md)."""
    return page_cluster(request)[0]


def _posted_cluster(request: HttpRequest) -> Cluster | HttpResponseBadRequest:
    """The cluster a POST names in its `cluster` field, or a 400 that says what is wrong.

    A write never guesses its cluster (the page's first-by-name default is for reading):
    without one the run or the thresholds row would have no cluster at all.
    """
    name = request.POST.get("cluster", "").strip()
    if not name:
        return HttpResponseBadRequest(
            "cluster: this field is required (the name of the cluster to act on).",
            content_type="text/plain; charset=utf-8",
        )
    cluster = Cluster.objects.filter(name=name).first()
    if cluster is None:
        return HttpResponseBadRequest(
            f"cluster: no cluster is named {name!r}.", content_type="text/plain; charset=utf-8"
        )
    return cluster


@role_required()
def health_page(request: HttpRequest) -> HttpResponse:
    """Each check's last run, the node grid by worst result, the results list, thresholds."""
    cluster, names = page_cluster(request)
    context: dict[str, object] = {"cluster": cluster, "now": timezone.now(), "clusters": names}
    if cluster is not None:
        query = request.GET.copy()
        if "status" not in query:
            query.setlist("status", ["fail", "warn"])
        filterset = ResultFilter(query, queryset=results(cluster=cluster))
        page = Paginator(filterset.qs, 100).get_page(request.GET.get("page"))
        # A pass is written when it changes: its `at` is when it began. How fresh each
        # verdict is is its kind's last completed run, shown beside it (docs/checks.md, How
        # a check run works).
        judged = kinds_judged(cluster_ids=[cluster.pk])
        rows = [(result, judged.get((cluster.pk, result.kind))) for result in page]
        # Read, not created: a page view writes nothing (the defaults until someone saves).
        thresholds = Thresholds.objects.filter(cluster=cluster).first() or Thresholds(
            cluster=cluster
        )
        query.pop("page", None)
        status = pipeline_status_cached()
        context.update(
            kinds=kind_statuses(cluster=cluster),
            racks=health_grid(cluster=cluster),
            page=page,
            result_rows=rows,
            query=query.urlencode(),
            statuses=list(ResultStatus),
            kinds_all=KIND_CHOICES,
            selected_statuses=query.getlist("status"),
            selected_kinds=query.getlist("kind"),
            states=list(NodeState),
            form=ThresholdsForm(instance=thresholds),
            thresholds=thresholds,
            can_operate=user_has_role(request.user, OPERATORS),
            # Whether a worker takes runs: "Run checks now" says plainly when none does
            # (docs/operations.md, Watching the watcher); the banner's cached status.
            workers_live=status.workers_live(),
            # healthy tiles on stale heartbeat evidence look unverified, not healthy
            # (docs/operations.md, Watching the watcher)
            unverified=unverified_words(status, cluster.name),
        )
    return render(request, "health/health.html", context)


@require_POST
@role_required(OPERATORS)
def run_now(request: HttpRequest) -> HttpResponse:
    """Queue checks now (one kind, or every scheduled kind). With no live worker the message
    says the runs will wait for one, not that they are queued (docs/operations.md, Watching
    the watcher)."""
    cluster = _posted_cluster(request)
    if not isinstance(cluster, Cluster):
        return cluster
    kind = request.POST.get("kind") or None
    if kind is not None and kind not in SCHEDULED_KINDS:
        return HttpResponseBadRequest(
            f"kind: {kind!r} does not run on a schedule; one of {', '.join(SCHEDULED_KINDS)}"
        )
    kinds = [kind] if kind else list(SCHEDULED_KINDS)
    queued = runs_queue(cluster=cluster, kinds=kinds, requested_by=request.user.get_username())
    waiting = {r.kind for r in queued.runs if r.pk in queued.already_queued}
    fresh = [k for k in kinds if k not in waiting]
    live = pipeline_status_cached().workers_live()
    said = []
    # The checks by the labels the page's table shows them by (the plug-in registry's), in
    # its order, never their internal names.
    named = _(", ").join(str(kind_label(k)) for k in fresh)
    if fresh and live:
        said.append(
            ngettext(
                "Queued %(n)s check run: %(named)s. The Checks table marks each Queued, then "
                "Running, until its results are in.",
                "Queued %(n)s check runs: %(named)s. The Checks table marks each Queued, then "
                "Running, until its results are in.",
                len(fresh),
            )
            % {"n": f"{len(fresh):,}", "named": named}
        )
    elif fresh:
        said.append(
            ngettext(
                "No worker is taking runs: %(n)s check run (%(named)s) will wait until one starts.",
                "No worker is taking runs: %(n)s check runs (%(named)s) will wait until one "
                "starts.",
                len(fresh),
            )
            % {"n": f"{len(fresh):,}", "named": named}
        )
    if waiting:
        again = _(", ").join(str(kind_label(k)) for k in kinds if k in waiting)
        said.append(_("Already queued, not queued again: %(checks)s.") % {"checks": again})
    if live:
        messages.success(request, " ".join(said))
    else:
        messages.warning(request, " ".join(said))
    return redirect(f"/health/?cluster={cluster.name}")


@require_POST
@role_required(OPERATORS)
def thresholds_save(request: HttpRequest) -> HttpResponse:
    """Save a cluster's thresholds (operators and up)."""
    cluster = _posted_cluster(request)
    if not isinstance(cluster, Cluster):
        return cluster
    thresholds, _created = Thresholds.objects.get_or_create(cluster=cluster)
    form = ThresholdsForm(request.POST, instance=thresholds)
    if form.is_valid():
        form.save(by=request.user.get_username())
        messages.success(request, _("Thresholds saved; the next runs use them."))
    else:
        errors = "; ".join(f"{k}: {', '.join(map(str, v))}" for k, v in form.errors.items())
        messages.error(request, _("Thresholds not saved — %(errors)s") % {"errors": errors})
    return redirect(f"/health/?cluster={cluster.name}#thresholds")


@role_required()
def pipeline_banner_fragment(request: HttpRequest) -> HttpResponse:
    """Every page's red pipeline banner as an HTML fragment (empty while everything is
    fresh), which a page left open polls so a wall screen shows it and clears it without a
    reload (docs/operations.md, Watching the watcher)."""
    answer = render(request, "health/_pipeline_banner.html")
    answer["Cache-Control"] = "no-store"
    return answer


@role_required()
def summary_fragment(request: HttpRequest) -> HttpResponse:
    """The overview's health line, as an HTML fragment."""
    cluster = _cluster(request)
    # Checks past twice their schedule: "all passing" would be a claim on old evidence.
    late = (
        [
            p.name[6:]
            for p in pipeline_status_cached().stale()
            if p.name.startswith("check:") and p.cluster == cluster.name
        ]
        if cluster
        else []
    )
    return render(
        request,
        "health/_summary.html",
        {
            "cluster": cluster,
            "s": summary(cluster=cluster) if cluster else None,
            "late": late,
            "now": timezone.now(),
        },
    )


@role_required()
def node_evidence_fragment(request: HttpRequest, hostname: str) -> HttpResponse:
    """The node page's check results and evidence, as an HTML fragment."""
    node = get_object_or_404(Node, hostname=hostname)
    return render(
        request,
        "health/_node_evidence.html",
        {"node": node, "now": timezone.now(), **node_evidence(node=node)},
    )


@role_required()
def job_suspects_fragment(request: HttpRequest, pk: int) -> HttpResponse:
    """The job page's nodes ranked by suspicion, as an HTML fragment."""
    job = get_object_or_404(Job, pk=pk)
    return render(
        request,
        "health/_job_suspects.html",
        {"job": job, "suspects": job_suspects(job=job, now=timezone.now())[:20]},
    )
