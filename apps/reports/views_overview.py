"""The overview page: KPIs, node grid, running jobs, latest incidents (and its panel, which
every open screen polls)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.translation import gettext as _

from apps.accounts.choices import OPERATORS
from apps.accounts.permissions import role_required, user_has_role
from apps.common import panels
from apps.fleet.selectors import cluster_gpu_kinds
from apps.health.pipeline import (
    age_words,
    data_age,
    pipeline_status_cached,
    unverified_words,
)
from apps.health.selectors import checks_waiting, telemetry_source_down
from apps.reports.gpu_models import COLUMNS, FRESH, model_rows
from apps.reports.params import pick_cluster
from apps.reports.selectors import overview, targets_for
from apps.reports.weekly import week_so_far
from apps.scheduler.selectors import cluster_sync_status


@role_required()
def overview_page(request: HttpRequest) -> HttpResponse:
    """The cluster overview: KPIs, node grid, running jobs, latest incidents; `?panel=1`
    answers the polled panels alone."""
    cluster, names = pick_cluster(request)
    now = timezone.now()
    context: dict[str, Any] = {"clusters": names, "cluster": cluster, "now": now}
    if cluster is not None:
        context["o"] = overview(cluster=cluster, now=now)
        context["week"] = week_so_far(cluster=cluster, now=now)
        context["targets"] = targets_for(cluster=cluster)
        context["sched"] = cluster_sync_status(cluster=cluster)
        context["telemetry_down"] = telemetry_source_down(cluster=cluster)
        context["checks_waiting"] = checks_waiting(cluster=cluster, now=now)
        context["can_pause"] = user_has_role(request.user, OPERATORS)
        # "updated" names the age of the data, not of the page (docs/operations.md, Watching
        # the watcher): the newest completed check run, red while the pipeline is not ok.
        status = pipeline_status_cached()
        data_at = data_age(status, cluster.name)
        context["data_at"] = data_at
        context["data_ok"] = status.ok
        # healthy tiles on stale heartbeat evidence look unverified, not healthy
        context["unverified"] = unverified_words(status, cluster.name)
        context["data_words"] = (
            _("data from %(age)s ago") % {"age": age_words((now - data_at).total_seconds())}
            if data_at
            else _("no health check has completed yet")
        )
        # A cluster of several GPU models shows them side by side, each with its figures
        # (read only then: the figures walk every GPU).
        kinds = {cluster.model_of(model) for _vendor, model in cluster_gpu_kinds(cluster)}
        models = model_rows(cluster=cluster, now=now) if len(kinds) > 1 else []
        if len(models) > 1:
            context["gpu_models"] = models
            context["model_columns"] = COLUMNS
            context["fresh_min"] = int(FRESH.total_seconds() // 60)
        # the windows in progress (the maintenance app lends them)
        context["panels"] = panels.render(slot=panels.OVERVIEW, request=request, cluster=cluster)
    template = (
        "reports/_overview_panels.html" if request.GET.get("panel") else "reports/overview.html"
    )
    return render(request, template, context)
