"""The GPUs page ranks posted telemetry in the database and reads only the GPUs it lists
(tests/bench/scale.py: 1.5 s at 102,400 GPUs when every GPU's document was read), with the
same lists `rank_gpus` makes of every GPU: ties by host and GPU (names compared bytewise),
throttle reasons, missing values, idle GPUs, stale values left out."""

from __future__ import annotations

import datetime as dt
import random

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.fleet.models import GPU
from apps.fleet.services import NodeSpec, nodes_register
from apps.reports.gpu_fleet import GPUValues, gpu_fleet, rank_gpus
from apps.reports.gpu_models import FRESH

pytestmark = pytest.mark.django_db


MODELS = ("H100", "", "AMD Instinct MI300X")  # '' is the cluster's (H100)
# "H100" (stored as written, as before the one-name migration) and the cluster's model are
# one model under its one name (docs/pages.md, One name per model).
H100 = "NVIDIA H100 80GB HBM3"
# H100, MI300X: each H100 at 1,755 MHz is 16 % below the MI300Xs' highest.
MIXED_CLOCKS = ((1755, 1755, 1700, 1500, 345, 0), (2100, 2100, 2000, 1800, 345, 0))


def _fleet(cluster, count: int, seed: int, mixed: bool = False) -> dt.datetime:  # noqa: ANN001
    """`count` nodes of 8 GPUs with varied, tied and missing values; returns now. `mixed`:
    each GPU's model one of MODELS, the MI300Xs' clocks higher than the H100s'."""
    rng = random.Random(seed)
    now = timezone.now()
    # Names that sort differently bytewise and by a locale (case, '-', '.').
    names = [f"{p}{i:02d}" for i in range(count // 4) for p in ("gpu-", "gpu.", "GPU", "gpu")]
    nodes = nodes_register(cluster=cluster, specs=[NodeSpec(hostname=n) for n in names])
    rows = []
    for node in nodes:
        for gpu in GPU.objects.filter(node=node):
            metrics: dict[str, float] = {
                "temp_c": rng.choice((60, 70, 70, 85)),
                "gpu_util": rng.choice((0, 12, 95, 100, 100)),
                "sm_clock_mhz": rng.choice((1980, 1980, 1900, 1700, 345, 0)),
            }
            if mixed:  # H100s under load at 1,755 MHz and below, MI300Xs up to 2,100
                gpu.model = rng.choice(MODELS)
                clocks = MIXED_CLOCKS[gpu.model == MODELS[2]]
                metrics["sm_clock_mhz"] = rng.choice(clocks)
            if rng.random() < 0.1:
                metrics["sm_clock_throttle"] = rng.choice((0x1, 0x4, 0x40, 0x10))
            if rng.random() < 0.1:
                del metrics[rng.choice(("temp_c", "gpu_util", "sm_clock_mhz"))]
            stale = rng.random() < 0.1
            gpu.metrics = metrics
            gpu.updated_at = now - (FRESH * 2 if stale else dt.timedelta(seconds=30))
            rows.append(gpu)
    GPU.objects.bulk_update(rows, ["metrics", "updated_at", "model"])
    return now


def _listed(rankings) -> list[list[tuple]]:  # noqa: ANN001
    return [
        [(r.gpu.hostname, r.gpu.index, r.shortfall, r.reasons) for r in rows]
        for rows in (rankings.hottest, rankings.least_utilised, rankings.throttled)
    ]


@pytest.mark.parametrize("mixed", [False, True])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_database_ranks_as_rank_gpus_does_over_every_gpu(cluster, seed, mixed):
    """`mixed`: H100s (some with no model: the cluster's) and MI300Xs, each GPU's clock
    against its own model's highest — in SQL and in `rank_gpus` alike."""
    now = _fleet(cluster, 40, seed, mixed)
    fresh = GPU.objects.filter(updated_at__gte=now - FRESH).values_list(
        "node__hostname", "index", "metrics", "model"
    )
    every = rank_gpus(
        [GPUValues(h, i, m, cluster.model_of(model)) for h, i, m, model in fresh], top=10
    )
    with CaptureQueriesContext(connection) as queries:
        ranked = gpu_fleet(cluster=cluster, now=now, top=10).rankings
    assert _listed(ranked) == _listed(every)
    assert all(len(rows) == 10 for rows in _listed(ranked))
    assert any(r.reasons for r in ranked.throttled) or seed != 1
    assert (
        (ranked.counted, ranked.max_clocks)
        == (every.counted, every.max_clocks)
        == (len(fresh), {H100: 1755, MODELS[2]: 2100} if mixed else {H100: 1980})
    )
    if mixed:  # an H100 at its usual clock is not throttled beside the MI300Xs
        assert all(r.gpu.metrics.get("sm_clock_mhz") != 1755 or r.reasons for r in ranked.throttled)
        assert any(r.gpu.model == H100 for r in ranked.throttled)
    # count and highest clock per model (one query, a row per model), three lists, the
    # listed GPUs' nodes and their running jobs
    assert len(queries) == 6


def test_a_fleet_with_no_fresh_values_lists_nothing(cluster):
    now = _fleet(cluster, 4, 1)
    ranked = gpu_fleet(cluster=cluster, now=now + FRESH * 3).rankings
    assert _listed(ranked) == [[], [], []] and ranked.counted == 0 and ranked.max_clocks == {}
