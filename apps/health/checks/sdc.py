"""`sdc`: silent data corruption — a non-finite loss, or a GPU's probe checksum outvoted by
its round (docs/checks.md, `sdc`)."""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Count, Max, Q
from django.utils.translation import gettext_lazy as _

from apps.fleet.gpu_models import canonical_model
from apps.fleet.models import GPU as GpuRow
from apps.fleet.models import Cluster
from apps.health import inputs
from apps.health.checks.base import CheckSpec, Context
from apps.health.detectors import Finding, NonFinite, sdc
from apps.health.detectors.findings import GPU
from apps.health.detectors.sdc import AGREES, Round, tally_votes
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


@dataclass(frozen=True)
class Rounds:
    """Each model's probe round, figured over the cluster's GPUs in SQL; the condition on
    `gpus_candidates`' annotations that picks the GPUs of rounds with a value to compare
    against (`among`), and that of those reporting it (`agree`)."""

    rounds: dict[str, Round]
    among: Q
    agree: Q


def probe_rounds(cluster: Cluster, round_s: int) -> Rounds:
    """Each model's probe round as the detector figures it among every GPU (its newest
    probe, each node's vote, its nodes), from counts grouped in SQL: the newest probe per
    model and value, then how many GPUs of each node reported each value within the round.
    Two statements and a row per node and value, not per GPU. Values are read and compared
    as `gpus_latest` reads them, so a round's votes are exactly the detector's."""
    key = "gemm_checksum"
    reported = (
        GpuRow.objects.filter(node__cluster=cluster, probe_at__isnull=False)
        .annotate(t=inputs.json_text(key))
        .filter(t__isnull=False)
        .order_by()
    )
    names: dict[str, set[str]] = defaultdict(set)  # model → the names it is stored under
    newest: dict[str, dt.datetime] = {}
    for name, text, at in reported.values_list("model", "t").annotate(at=Max("probe_at")):
        if isinstance(inputs.json_value(text), int | float):
            model = canonical_model(cluster.model_of(name))
            names[model].add(name)
            newest[model] = max(at, newest.get(model, at))
    if not newest:
        return Rounds({}, Q(pk__in=[]), Q(pk__in=[]))
    span = dt.timedelta(seconds=round_s)
    in_round = {m: Q(model__in=sorted(names[m]), probe_at__gte=newest[m] - span) for m in newest}
    counts: dict[str, dict[str, Counter[float]]] = defaultdict(lambda: defaultdict(Counter))
    # model → value → the texts read as it (1, 1.0), each once
    texts: dict[str, dict[float, dict[object, None]]] = defaultdict(lambda: defaultdict(dict))
    rows = (
        reported.filter(_any(in_round.values()))
        .values_list("model", "node__hostname", "t")
        .annotate(n=Count("pk"))
    )
    for name, host, text, n in rows:
        value = inputs.json_value(text)
        if isinstance(value, int | float):
            model = canonical_model(cluster.model_of(name))
            counts[model][host][value] += n
            texts[model][value][text] = None
    rounds = {m: Round(newest[m], tally_votes(counts[m]), len(counts[m])) for m in newest}
    among, agree = [], []
    for model, round_ in rounds.items():
        won = round_.winner()
        if won is not None:
            among.append(in_round[model])
            agree.append(in_round[model] & Q(t_gemm_checksum__in=list(texts[model][won[0]])))
    return Rounds(rounds, _any(among), _any(agree))


def _any(conditions: Iterable[Q]) -> Q:
    """Any of `conditions`; none: nothing."""
    out = Q(pk__in=[])
    for q in conditions:
        out |= q
    return out


def run(ctx: Context) -> list[Finding]:
    """The running jobs' non-finite samples of the last round, and the checksums of the
    GPUs to judge against each model's round. A GPU in a round with a value to compare
    against, reporting that value, whose stored result is the pass "checksum agrees" would
    pass again unchanged: it is counted, not loaded (docs/checks.md, Candidates); one
    outside every such round gets no verdict, and is neither."""
    since = ctx.now - dt.timedelta(seconds=ctx.limits.sdc_round_s)
    figured = probe_rounds(ctx.cluster, ctx.limits.sdc_round_s)
    picked = inputs.gpus_candidates(
        ctx.cluster,
        ctx.kind,
        ("gemm_checksum",),
        passing=figured.agree,
        message=AGREES,
        skip_hosts=ctx.in_maintenance,
        among=figured.among & Q(t_gemm_checksum__isnull=False),
    )
    ctx.unchanged += picked.unchanged
    return sdc(
        non_finite(ctx.jobs, since),
        {j.pk: j.name for j in ctx.jobs},
        picked.gpus,
        limits=ctx.limits,
        rounds=figured.rounds,
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
