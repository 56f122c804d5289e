"""The peak a job's MFU divides by (docs/formulas.md, MFU): per GPU, the mean dense BF16 peak
of the GPUs on its nodes, each by its own model — so `gpu_count` × this is the sum of its GPUs'
peaks. None (peak unknown) when one of those models has no peak in its cluster."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from django.db.models import Count

from apps.fleet.models import GPU, Cluster


def job_peaks(cluster: Cluster, job_ids: Iterable[int]) -> dict[int, float | None]:
    """job id → its mean peak per GPU (TFLOP/s) or None, in one query. A job with no node
    (or nodes without GPUs yet) is taken to run on the cluster's `gpu_model`."""
    ids = list(job_ids)
    counts: dict[int, list[tuple[str, int]]] = defaultdict(list)
    if ids:
        rows = (
            GPU.objects.filter(node__jobs__in=ids)
            .values_list("node__jobs", "model")
            .annotate(n=Count("id"))
            .order_by()
        )
        for job_id, model, n in rows:
            counts[job_id].append((model, n))
    default = cluster.peak_for(cluster.gpu_model)
    out: dict[int, float | None] = {}
    for job_id in ids:
        out[job_id] = mean_peak(cluster, counts.get(job_id, ())) if job_id in counts else default
    return out


def mean_peak(cluster: Cluster, models: Iterable[tuple[str, int]]) -> float | None:
    """Σ n × peak(model) / Σ n over (model, number of GPUs); None if a model's peak is
    unknown or there are no GPUs."""
    total = gpus = 0.0
    for model, n in models:
        peak = cluster.peak_for(model)
        if peak is None:
            return None
        total += n * peak
        gpus += n
    return total / gpus if gpus else None


def attach_peaks(jobs: Iterable) -> None:
    """Set each job's peak (`Job.peak_tflops`) for a page of jobs: one query per cluster."""
    by_cluster: dict[int, list] = defaultdict(list)
    for job in jobs:
        by_cluster[job.cluster_id].append(job)
    for members in by_cluster.values():
        peaks = job_peaks(members[0].cluster, [j.pk for j in members])
        for job in members:
            job.__dict__["peak_tflops"] = peaks[job.pk]
