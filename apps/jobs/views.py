"""Job pages: the jobs list, a job's page and its progress chart."""

from __future__ import annotations

from django.core.paginator import Page, Paginator
from django.db.models import Case, Value, When
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone

from apps.accounts.permissions import role_required
from apps.common import panels
from apps.common.listing import list_page
from apps.fleet.choices import NodeState
from apps.fleet.models import Cluster
from apps.fleet.page_cluster import cluster_remember
from apps.jobs.charts import job_progress_figure
from apps.jobs.choices import JobStatus, RankVerdict
from apps.jobs.filters import JobFilter
from apps.jobs.models import Job
from apps.jobs.peaks import attach_peaks
from apps.jobs.readers import job_incidents
from apps.jobs.selectors import (
    job_detail,
    job_has_stalled_rank,
    job_list,
    job_phase_totals,
    job_ranks,
    job_verdict,
)

# A job's page shows its nodes this many at a time (`?nodes=` is the page), those not
# healthy first: a job on 9,600 nodes is pages of chips, not one page of 9,600.
NODES_PER_PAGE = 256


@role_required()
def job_list_page(request: HttpRequest) -> HttpResponse:
    """All jobs, filterable by cluster/status/name, sortable, paginated; each with its
    condition (what its open incidents say) and MFU now; a cluster chosen here is remembered
    for the per-cluster pages (docs/pages.md)."""
    cluster_remember(request, request.GET.get("cluster", ""))
    listing = list_page(request, JobFilter(request.GET, queryset=job_list()))
    page = listing["page"]
    page.object_list = list(page.object_list)
    health = job_incidents([j.pk for j in page.object_list])
    attach_peaks(page.object_list)
    for job in page.object_list:
        job.health = health[job.pk]
        job.mfu = job.mfu_now(stopped=job.health.stopped)
    return render(
        request,
        "jobs/job_list.html",
        {
            **listing,
            "statuses": list(JobStatus),
            "selected_statuses": request.GET.getlist("status"),
            "clusters": Cluster.objects.values_list("name", flat=True),
            "now": timezone.now(),
        },
    )


@role_required()
def job_detail_page(request: HttpRequest, pk: int) -> HttpResponse:
    """A job: what stops it (a banner linking the incident), facts, progress chart (MFU,
    throughput, loss), its ranks, checkpoints, time in the run not spent training (phases),
    nodes, scheduler attempts; and the cards the apps above lend (`common/panels.py`) —
    after the chart its effective rate (reports) and its incidents and their cost
    (incidents), after the ranks its nodes ranked by suspicion (health)."""
    job = get_object_or_404(Job.objects.select_related("cluster"), pk=pk)
    health = job_incidents([job.pk])[job.pk]
    # While a rank reports a stall, the ranks (who the hang waits on) come first.
    ranks_first = job.status == JobStatus.RUNNING and job_has_stalled_rank(job)
    # Time not spent training: its totals (one query), the latest 20 only when there are some.
    phase_totals = job_phase_totals(job)
    phases = list(job.phases.select_related("node").order_by("-start")[:20]) if phase_totals else []
    return render(
        request,
        "jobs/job_detail.html",
        {
            "job": job,
            "health": health,
            "mfu_now": job.mfu_now(stopped=health.stopped),
            "checkpoints": list(job.checkpoints.order_by("-saved_at")[:20]),
            "checkpoint_count": job.checkpoints.count(),
            "phases": phases,
            "phase_totals": phase_totals,
            "nodes": _nodes_page(job, request.GET.get("nodes")),
            "attempts": list(job.attempts.order_by("-key")[:20]),
            "attempt_count": job.attempts.count(),
            "ranks_first": ranks_first,
            "panels": panels.render(slot=panels.JOB, request=request, job=job),
            "panels_below": panels.render(slot=panels.JOB_BELOW, request=request, job=job),
            "now": timezone.now(),
        },
    )


def _nodes_page(job: Job, number: str | None) -> Page:
    """One page of the job's (hostname, state, the state in words), nodes not healthy first,
    then by name; a page number that is not one gives the first or last page."""
    healthy_last = Case(When(state=NodeState.HEALTHY, then=Value(1)), default=Value(0))
    rows = job.nodes.order_by(healthy_last, "hostname").values_list("hostname", "state")
    page = Paginator(rows, NODES_PER_PAGE).get_page(number)
    words = dict(NodeState.choices)
    shown: list[tuple[str, str, str]] = [(h, s, str(words.get(s, s))) for h, s in page]
    page.object_list = shown  # type: ignore[assignment]  # the page's rows, in words
    return page


@role_required()
def job_progress_chart(request: HttpRequest, pk: int) -> JsonResponse:
    """The job page's progress chart as Plotly JSON (≤ 2,000 points per trace)."""
    job = job_detail(pk=pk)
    if job is None:
        raise Http404(f"no job {pk}")
    return JsonResponse(job_progress_figure(job=job))


# The ranks grid draws one tile per rank up to this many; past it, only the ranks that are
# not waiting like the rest (a 100,000-rank job's page stays a page).
RANK_TILES = 8192
CULPRIT_STACKS = 8


@role_required()
def job_ranks_fragment(request: HttpRequest, pk: int) -> HttpResponse:
    """The job page's ranks (docs/checks.md, Ranks): the verdict's sentence, every rank as a
    tile coloured by verdict, the stack most ranks share and each culprit's."""
    job = get_object_or_404(Job, pk=pk)
    ranks = job_ranks(job)
    now = timezone.now()
    verdict = job_verdict(job, now, ranks=ranks) if ranks.attempt is not None else None
    words = {v.value: str(v.label).lower() for v in RankVerdict}  # the page's language
    tiles: list[tuple[int, str, str, str]] = []
    shared: list[dict[str, object]] = []
    culprits: list[tuple[dict[str, object], str, list[dict[str, object]]]] = []
    if verdict is not None:
        rows = ranks.rows
        if len(rows) > RANK_TILES:
            rows = [
                r for r in rows if verdict.verdicts.get(r["rank"]) not in ("waiting", "running")
            ]
        tiles = [
            (r["rank"], r["node__hostname"], v, words.get(v, v))
            for r in rows
            for v in [verdict.verdicts.get(r["rank"], "running")]
        ]
        digests = [r["stack__digest"] for r in ranks.rows if r["stack__digest"]]
        by_rank = {r["rank"]: r for r in ranks.rows}
        waiting = [
            by_rank[n]["stack__digest"]
            for n, v in verdict.verdicts.items()
            if v == "waiting" and by_rank[n]["stack__digest"]
        ]
        common = max(set(waiting or digests), key=(waiting or digests).count, default=None)
        shared = ranks.stacks.get(common, []) if common else []
        for n in verdict.culprits[:CULPRIT_STACKS]:
            row = by_rank[n]
            frames = ranks.stacks.get(row["stack__digest"] or "", [])
            word = verdict.verdicts.get(n, "")
            culprits.append((row, words.get(word, word), frames))
    return render(
        request,
        "jobs/_ranks.html",
        {
            "job": job,
            "ranks": ranks,
            "verdict": verdict,
            "tiles": tiles,
            "hidden": len(ranks.rows) - len(tiles),
            "shared": shared,
            "culprits": culprits,
            "counts": [(k, words.get(k, k), n) for k, n in verdict.counts.items() if n]
            if verdict
            else [],
            "now": now,
        },
    )
