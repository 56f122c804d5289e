"""Numbers a real cluster never reaches are refused with a 400 naming the field, nothing
stored (docs/api.md, Conventions: "Bounds on numbers"); the bound itself is accepted."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.common.limits import DURATION_S, FLOPS_PER_TOKEN, GPU_COUNT, N_PARAMS, TOKENS_PER_S
from apps.jobs.models import Checkpoint, Job, JobMetric, NodeStepMetric, Rank
from tests.jobs.test_ranks_api import STALLS, report

pytestmark = pytest.mark.django_db


def iso(t: dt.datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def job_body(**changes: object) -> dict:
    return {"name": "run-1", "cluster": "c1", "gpu_count": 8, "nodes": ["gpu000"], **changes}


@pytest.mark.parametrize(
    ("field", "absurd", "bound"),
    [
        ("n_params", 1e300, N_PARAMS),
        ("flops_per_token", 1e300, FLOPS_PER_TOKEN),
        ("gpu_count", GPU_COUNT + 1, GPU_COUNT),
        ("gpu_count", 10_000_000, GPU_COUNT),
    ],
)
def test_a_job_past_a_bound_is_refused_and_the_bound_accepted(api, nodes, field, absurd, bound):
    refused = api("ada").post("/api/v1/jobs/", job_body(**{field: absurd}), format="json")
    assert refused.status_code == 400 and list(refused.json()) == [field], refused.json()
    assert not Job.objects.exists()
    accepted = api("ada").post("/api/v1/jobs/", job_body(**{field: bound}), format="json")
    assert accepted.status_code == 201, accepted.json()
    assert getattr(Job.objects.get(), field) == bound


@pytest.mark.parametrize(
    ("field", "absurd", "bound"),
    [
        ("n_params", 1e15, N_PARAMS),
        ("flops_per_token", 1e300, FLOPS_PER_TOKEN),
        ("gpu_count", GPU_COUNT + 1, GPU_COUNT),
    ],
)
def test_a_patch_past_a_bound_is_refused_and_the_bound_accepted(api, job, field, absurd, bound):
    before = getattr(job, field)
    url = f"/api/v1/jobs/{job.pk}/"
    refused = api("otto").patch(url, {field: absurd}, format="json")
    assert refused.status_code == 400 and list(refused.json()) == [field], refused.json()
    job.refresh_from_db()
    assert getattr(job, field) == before
    assert api("otto").patch(url, {field: bound}, format="json").status_code == 200
    job.refresh_from_db()
    assert getattr(job, field) == bound


def sample(i: int = 0, **changes: object) -> dict:
    ts = timezone.now() - dt.timedelta(minutes=10 - i)
    return {"ts": iso(ts), "step": i, "step_time_s": 10.0, "tokens_per_s": 1e5, **changes}


@pytest.mark.parametrize(
    ("field", "absurd", "bound", "node"),
    [
        ("tokens_per_s", 1e100, TOKENS_PER_S, None),
        ("step_time_s", 1e308, DURATION_S, None),
        ("step_time_s", DURATION_S + 1, DURATION_S, "gpu000"),
        ("compute_s", 1e308, DURATION_S, "gpu000"),
    ],
)
def test_a_metric_sample_past_a_bound_is_refused_and_the_bound_accepted(
    api, job, field, absurd, bound, node
):
    where = {"node": node} if node else {}
    url = f"/api/v1/jobs/{job.pk}/metrics/"
    batch = [sample(0, **where), sample(1, **where, **{field: absurd})]
    refused = api("ada").post(url, {"samples": batch}, format="json")
    assert refused.status_code == 400, refused.json()
    assert list(refused.json()) == [f"samples[1].{field}"], refused.json()
    assert not JobMetric.objects.exists() and not NodeStepMetric.objects.exists()
    job.refresh_from_db()
    assert job.last_tokens_per_s is None
    batch = [sample(0, **where), sample(1, **where, **{field: bound})]
    accepted = api("ada").post(url, {"samples": batch}, format="json")
    assert accepted.status_code == 202, accepted.json()


def test_the_mfu_attack_is_refused_and_mfu_stays_finite_at_the_bounds(api, job):
    """flops_per_token 1e300 with tokens/s 1e100 made MFU infinite; at the bounds it is a
    (large) finite number in every answer."""
    client, url = api("ada"), f"/api/v1/jobs/{job.pk}/"
    assert client.patch(url, {"flops_per_token": 1e300}, format="json").status_code == 400
    metrics = f"{url}metrics/"
    absurd = client.post(metrics, {"samples": [sample(tokens_per_s=1e100)]}, format="json")
    assert absurd.status_code == 400 and "samples[0].tokens_per_s" in absurd.json()
    assert client.patch(url, {"flops_per_token": FLOPS_PER_TOKEN}, format="json").status_code == 200
    edge = client.post(metrics, {"samples": [sample(tokens_per_s=TOKENS_PER_S)]}, format="json")
    assert edge.status_code == 202
    reader = api("mia")
    mfu = reader.get(url).json()["mfu_now"]
    assert mfu is not None and 0 < mfu < float("inf")
    assert reader.get("/api/v1/jobs/").status_code == 200
    [point] = reader.get(f"{metrics}").json()["points"]
    assert point["mfu"] == pytest.approx(mfu)


def test_a_checkpoint_past_the_bound_is_refused_and_the_bound_accepted(api, job):
    url = f"/api/v1/jobs/{job.pk}/checkpoints/"
    saved = iso(timezone.now() - dt.timedelta(hours=1))
    body = {"step": 10, "saved_at": saved, "blocking_s": 1e308}
    refused = api("ada").post(url, body, format="json")
    assert refused.status_code == 400 and list(refused.json()) == ["blocking_s"], refused.json()
    assert not Checkpoint.objects.exists()
    accepted = api("ada").post(url, {**body, "blocking_s": DURATION_S}, format="json")
    assert accepted.status_code == 201, accepted.json()
    assert Checkpoint.objects.get().blocking_s == DURATION_S


@pytest.mark.parametrize("absurd", [1e308, DURATION_S + 1])
def test_a_stall_report_past_the_bound_is_refused_and_the_bound_accepted(api, job, absurd):
    body = {"reports": [report(job, 0), report(job, 1, stalled_s=absurd)]}
    refused = api("ada").post(STALLS, body, "json")
    assert refused.status_code == 400, refused.json()
    assert list(refused.json()) == ["reports[1].stalled_s"], refused.json()
    assert not Rank.objects.exists()
    body = {"reports": [report(job, 0), report(job, 1, stalled_s=DURATION_S)]}
    assert api("ada").post(STALLS, body, "json").status_code == 202
    assert Rank.objects.get(rank=1).stalled_s == DURATION_S
