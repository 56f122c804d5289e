"""`sdc`: silent data corruption — a non-finite loss, or a GPU's probe checksum outvoted by
its round (docs/checks.md, `sdc`)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from apps.health import inputs
from apps.health.checks.base import CheckSpec, Context
from apps.health.detectors import Finding, NonFinite, sdc
from apps.health.detectors.findings import GPU
from apps.health.thresholds import Shared, threshold
from apps.incidents.choices import Category
from apps.jobs.models import Job, JobMetric

KIND = "sdc"


@dataclass(frozen=True)
class SdcLimits(Shared):
    """The checksum vote's thresholds (docs/checks.md, Thresholds), besides those every check
    shares."""

    sdc_round_s: int = threshold(
        600, _("Checksum vote: one probe round lasts"), "s", check=KIND, lo=1, hi=86_400
    )


def non_finite(jobs: list[Job], since: dt.datetime) -> list[NonFinite]:
    """Job-wide samples with a non-finite loss or grad norm since `since`."""
    return [
        NonFinite(job_id, ts, step, what)
        for job_id, ts, step, what in JobMetric.objects.filter(job__in=jobs, ts__gte=since)
        .filter(~Q(nonfinite=""))
        .values_list("job_id", "ts", "step", "nonfinite")
    ]


def run(ctx: Context) -> list[Finding]:
    """The running jobs' non-finite samples of the last round and every GPU's checksum."""
    since = ctx.now - dt.timedelta(seconds=ctx.limits.sdc_round_s)
    return sdc(
        non_finite(ctx.jobs, since),
        {j.pk: j.name for j in ctx.jobs},
        inputs.gpus_latest(ctx.cluster, ("gemm_checksum",)),
        limits=ctx.limits,
    )


SPEC = CheckSpec(
    kind=KIND,
    limits=SdcLimits,
    label=_("Silent data corruption"),
    order=40,
    target=GPU,
    categories=(Category.SILENT_DATA_CORRUPTION,),
    run=run,
)
