"""A job's GPU models, which its MFU's peak divides by, are counted once and remembered for
a while (docs/formulas.md, MFU): the count reads every GPU of the job's nodes, 76,800 for
the largest job of a 102,400-GPU fleet. The peaks are the cluster's current ones, and a
change of the job's nodes through KUAE is seen at once."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.fleet.models import GPU
from apps.fleet.services import NodeSpec, nodes_register
from apps.jobs.peaks import job_peaks
from apps.jobs.services import job_create, job_update

pytestmark = pytest.mark.django_db


def _nodes(cluster, prefix: str, model: str, count: int = 2) -> list:  # noqa: ANN001
    nodes = nodes_register(
        cluster=cluster, specs=[NodeSpec(hostname=f"{prefix}{i}") for i in range(count)]
    )
    GPU.objects.filter(node__in=nodes).update(model=model)
    assert GPU.objects.filter(node__in=nodes).count() == 8 * count
    return nodes


def test_a_jobs_models_are_read_once_and_its_peak_follows_the_cluster(cluster):  # noqa: ANN001
    h100 = _nodes(cluster, "h", "H100")
    a100 = _nodes(cluster, "a", "A100-SXM4-80GB")
    job, _ = job_create(cluster=cluster, nodes=h100 + a100, name="mixed", gpu_count=32)
    empty, _ = job_create(cluster=cluster, name="no-nodes-yet", gpu_count=8)
    cluster.peak_tflops_by_model = {"H100": 1000.0, "A100-SXM4-80GB": 300.0}
    with CaptureQueriesContext(connection) as first:
        assert job_peaks(cluster, [job.pk, empty.pk]) == {
            job.pk: 650.0,
            empty.pk: cluster.peak_for(cluster.gpu_model),
        }
    assert len(first) == 1
    # remembered: no query for the job with GPUs; the one without is asked again
    with CaptureQueriesContext(connection) as again:
        assert job_peaks(cluster, [job.pk])[job.pk] == 650.0
    assert len(again) == 0
    # the cluster's peaks are read as they are now, not remembered with the models
    cluster.peak_tflops_by_model = {"H100": 1000.0, "A100-SXM4-80GB": 500.0}
    assert job_peaks(cluster, [job.pk])[job.pk] == 750.0
    # the job's nodes changed through KUAE: counted again at once
    job_update(job=job, nodes=h100)
    with CaptureQueriesContext(connection) as changed:
        assert job_peaks(cluster, [job.pk])[job.pk] == 1000.0
    assert len(changed) == 1
    # a job given nodes after a page read it without any is not stuck on the default
    job_update(job=empty, nodes=a100)
    assert job_peaks(cluster, [empty.pk])[empty.pk] == 500.0
