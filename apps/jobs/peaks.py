"""The peak a job's MFU divides by (docs/formulas.md, MFU): per GPU, the mean dense BF16 peak
of the GPUs on its nodes, each by its own model — so `gpu_count` × this is the sum of its GPUs'
peaks. None (peak unknown) when one of those models has no peak in its cluster."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from django.core.cache import cache
from django.db.models import Count

from apps.fleet.models import GPU, Cluster

# How long a process remembers which GPU models a job runs on (docs/formulas.md, MFU): the
# count walks every GPU of the job's nodes (76,800 for the largest job of a 102,400-GPU
# fleet, most of a page's time), and a job's nodes and their GPUs rarely change.
MODELS_TTL_S = 300


def _key(job_id: int) -> str:
    return f"job-gpu-models:{job_id}"


def job_gpu_models(job_ids: Iterable[int]) -> dict[int, list[tuple[str, int]]]:
    """job id → (GPU model, how many of its nodes' GPUs) for the jobs whose nodes have GPUs;
    remembered for `MODELS_TTL_S` in the process's cache, the rest read in one query."""
    ids = list(job_ids)
    known: dict[str, list[tuple[str, int]]] = cache.get_many([_key(i) for i in ids]) if ids else {}
    out = {i: known[_key(i)] for i in ids if _key(i) in known}
    missing = [i for i in ids if _key(i) not in known]
    if missing:
        read: dict[int, list[tuple[str, int]]] = {i: [] for i in missing}
        rows = (
            GPU.objects.filter(node__jobs__in=missing)
            .values_list("node__jobs", "model")
            .annotate(n=Count("id"))
            .order_by()
        )
        for job_id, model, n in rows:
            read[job_id].append((model, n))
        # a job whose nodes have no GPUs yet is read again next time: its nodes may come
        found = {i: v for i, v in read.items() if v}
        cache.set_many({_key(i): v for i, v in found.items()}, MODELS_TTL_S)
        out.update(found)
    return out


def job_models_forget(job_ids: Iterable[int]) -> None:
    """Forget the jobs' remembered GPU models (their nodes changed), in this process."""
    cache.delete_many([_key(i) for i in job_ids])


def job_peaks(cluster: Cluster, job_ids: Iterable[int]) -> dict[int, float | None]:
    """job id → its mean peak per GPU (TFLOP/s) or None: the GPU models of its nodes
    (`job_gpu_models`: at most one query) at the cluster's current peaks. A job with no node
    (or nodes without GPUs yet) is taken to run on the cluster's `gpu_model`."""
    ids = list(job_ids)
    counts = job_gpu_models(ids)
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
