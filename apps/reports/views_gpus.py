"""The fleet view of GPUs: the hottest, least utilised and most throttled GPUs of a cluster
with their nodes and jobs (`apps.reports.gpu_fleet`)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from apps.accounts.permissions import role_required
from apps.reports.gpu_fleet import BUSY_UTIL, CLOCK_SHORTFALL, GPUFleet, gpu_fleet
from apps.reports.gpu_models import COLUMNS, FRESH, model_rows
from apps.reports.params import pick_cluster

FRESH_MIN = int(FRESH.total_seconds() // 60)


@role_required()
def gpu_fleet_page(request: HttpRequest) -> HttpResponse:
    """`/gpus/?cluster=`: three ranked tables of the cluster's GPUs by their latest values."""
    cluster, names = pick_cluster(request)
    now = timezone.now()
    context: dict[str, Any] = {
        "clusters": names,
        "cluster": cluster,
        "now": now,
        "busy_util": BUSY_UTIL,
        "shortfall_pct": round(CLOCK_SHORTFALL * 100),
        "fresh_min": FRESH_MIN,
    }
    if cluster is not None:
        fleet = gpu_fleet(cluster=cluster, now=now)
        context["fleet"] = fleet
        # each model side by side, with its own figures (a mixed cluster's two vendors)
        context["gpu_models"] = model_rows(cluster=cluster, now=now, groups=fleet.groups)
        context["model_columns"] = COLUMNS
        # model → its highest SM clock, as pairs (a model named "items" is no dict method)
        context["max_clocks"] = list(fleet.rankings.max_clocks.items())
        lists = (
            ("hot", _("Hottest"), _("temperature, highest first"), fleet.rankings.hottest),
            (
                "idle",
                _("Least utilised"),
                _("utilisation, lowest first"),
                fleet.rankings.least_utilised,
            ),
            (
                "throttled",
                _("Most throttled"),
                _("SM clock furthest below the highest of its model"),
                fleet.rankings.throttled,
            ),
        )
        # a Model column only where the GPUs listed are of several models
        context["mixed"] = len({r.gpu.model for *_, rows in lists for r in rows}) > 1
        context["tables"] = [
            (
                key,
                title,
                order,
                [
                    {
                        "r": r,
                        "node": fleet.nodes.get(r.gpu.hostname),
                        "jobs": fleet.jobs.get(r.gpu.hostname, []),
                        "below": None if r.shortfall is None else r.shortfall * 100,
                    }
                    for r in rows
                ],
                _empty(key, fleet),
            )
            for key, title, order, rows in lists
        ]
    return render(request, "reports/gpus.html", context)


# What a table's GPUs must report to be ranked in it.
_NEEDS = {"hot": gettext_lazy("its temperature"), "idle": gettext_lazy("its utilisation")}


def _empty(key: str, fleet: GPUFleet) -> str:
    """What an empty table says: why nothing is listed, never a pass it could not judge (a
    cluster whose GPUs report no SM clock is not "not throttled")."""
    counted = fleet.rankings.counted
    if fleet.error:
        return _("Nothing to rank while the source is down.")
    if not counted:
        if fleet.source == "prometheus":
            return _("The cluster's Prometheus has no GPU series for this cluster.")
        return _("No GPU has posted telemetry in the last %(minutes)s minutes.") % {
            "minutes": FRESH_MIN
        }
    gpus = ngettext("%(n)s GPU", "%(n)s GPUs", counted) % {"n": f"{counted:,}"}
    if key in _NEEDS:
        return _("None of the %(gpus)s ranked reports %(what)s.") % {
            "gpus": gpus,
            "what": _NEEDS[key],
        }
    if not fleet.rankings.max_clocks:
        return _(
            "Not judged by clock: none of the %(gpus)s ranked reports its SM clock. None "
            "reports a reason that slows its clocks either."
        ) % {"gpus": gpus}
    return _("None of the %(gpus)s ranked is throttled.") % {"gpus": gpus}
