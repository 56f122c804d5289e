"""Jobs, step metrics and checkpoints endpoints (docs/api.md, Jobs)."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import math

import pytest
from django.test import override_settings

from apps.fleet.services import NodeSpec, cluster_create, nodes_register
from apps.jobs.models import Checkpoint, Job, JobMetric, NodeStepMetric
from apps.jobs.services import job_create

pytestmark = pytest.mark.django_db

T0 = dt.datetime(2026, 11, 23, 8, 0, tzinfo=dt.UTC)


def iso(t: dt.datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def samples(n: int, *, start: dt.datetime = T0, every: float = 10.0, **extra) -> list[dict]:
    return [
        {
            "ts": iso(start + dt.timedelta(seconds=i * every)),
            "step": i,
            "step_time_s": 10.0,
            "tokens_per_s": 1.0e5,
            "loss": 2.5,
            **extra,
        }
        for i in range(n)
    ]


def test_create_job_with_nodes_and_read_it(api, nodes):
    body = {
        "name": "run-1",
        "cluster": "c1",
        "external_id": "4242",
        "n_params": 7e9,
        "gpu_count": 16,
        "nodes": ["gpu001", "gpu000"],
        "status": "running",
        "started_at": iso(T0),
    }
    created = api("ada").post("/api/v1/jobs/", body, format="json")
    assert created.status_code == 201, created.json()
    assert list(created.json()) == ["id"]  # an agent never reads back what it wrote
    job = api("mia").get(f"/api/v1/jobs/{created.json()['id']}/").json()
    assert job["nodes"] == ["gpu000", "gpu001"] and job["cluster"] == "c1" and job["id"]
    again = api("otto").post(
        "/api/v1/jobs/",
        {**body, "status": "completed", "ended_at": iso(T0 + dt.timedelta(hours=3))},
        format="json",
    )
    assert again.status_code == 200 and again.json()["id"] == job["id"]
    assert again.json()["status"] == "completed"
    assert Job.objects.count() == 1
    listed = api("mia").get("/api/v1/jobs/?cluster=c1&status=completed").json()
    assert listed["count"] == 1 and listed["results"][0]["nodes"] == ["gpu000", "gpu001"]


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"nodes": ["gpu000", "ghost-1"]}, "nodes"),
        ({"gpu_count": 0}, "gpu_count"),
        ({"status": "exploded"}, "status"),
        ({"cluster": "nope"}, "cluster"),
        ({"started_at": iso(T0), "ended_at": iso(T0 - dt.timedelta(hours=1))}, "ended_at"),
        ({"n_params": "many"}, "n_params"),
    ],
)
def test_bad_job_is_400_naming_the_field(api, nodes, patch, field):
    body = {"name": "run-1", "cluster": "c1", "gpu_count": 8, "nodes": ["gpu000"], **patch}
    response = api("otto").post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 400 and field in response.json(), response.json()
    assert Job.objects.count() == 0


def test_patch_job(api, job):
    response = api("ada").patch(
        f"/api/v1/jobs/{job.pk}/", {"status": "failed", "nodes": ["gpu004"]}, format="json"
    )
    assert response.status_code == 200 and response.json() == {"id": job.pk}
    body = api("mia").get(f"/api/v1/jobs/{job.pk}/").json()
    assert body["status"] == "failed" and body["ended_at"] and body["nodes"] == ["gpu004"]
    assert (
        api("mia")
        .patch(f"/api/v1/jobs/{job.pk}/", {"status": "running"}, format="json")
        .status_code
        == 403
    )


def test_job_list_query_count_is_flat(api, cluster, nodes, django_assert_max_num_queries):
    client = api("otto")
    for i in range(30):
        client.post(
            "/api/v1/jobs/",
            {"name": f"j{i}", "cluster": "c1", "gpu_count": 8, "nodes": ["gpu000", "gpu001"]},
            format="json",
        )
    # + open incidents of the page's jobs: 2 queries; + its GPUs' models for MFU's peak: 1
    with django_assert_max_num_queries(9):
        body = api("mia").get("/api/v1/jobs/?page_size=100").json()
    assert body["count"] == 30 and all(j["nodes"] == ["gpu000", "gpu001"] for j in body["results"])


def test_metrics_batch_is_stored_once_and_updates_job(api, job):
    batch = {"samples": samples(50)}
    client = api("ada")
    first = client.post(f"/api/v1/jobs/{job.pk}/metrics/", batch, format="json")
    assert first.status_code == 202 and first.json() == {"accepted": 50}
    assert client.post(f"/api/v1/jobs/{job.pk}/metrics/", batch, format="json").status_code == 202
    assert JobMetric.objects.filter(job=job).count() == 50
    job.refresh_from_db()
    assert job.last_step == 49 and job.last_metric_at == T0 + dt.timedelta(seconds=490)


def test_per_node_samples_go_apart_and_are_deduplicated(api, job):
    batch = {
        "samples": [
            {"ts": iso(T0), "step": 1, "step_time_s": 10, "tokens_per_s": 1e5},
            {"ts": iso(T0), "step": 1, "step_time_s": 10, "node": "gpu000", "compute_s": 8.1},
            {"ts": iso(T0), "step": 1, "step_time_s": 10, "node": "gpu001", "compute_s": 8.3},
        ]
    }
    for _ in range(2):
        assert (
            api("ada").post(f"/api/v1/jobs/{job.pk}/metrics/", batch, format="json").status_code
            == 202
        )
    assert JobMetric.objects.filter(job=job).count() == 1
    assert NodeStepMetric.objects.filter(job=job).count() == 2


def test_one_bad_sample_rejects_the_whole_batch_naming_index_and_field(api, job):
    batch = samples(10)
    batch[3]["step_time_s"] = -1
    batch[7]["ts"] = "2026-11-23T08:00:00"  # no zone
    del batch[8]["tokens_per_s"]
    response = api("ada").post(f"/api/v1/jobs/{job.pk}/metrics/", {"samples": batch}, format="json")
    assert response.status_code == 400
    errors = response.json()
    assert set(errors) == {"samples[3].step_time_s", "samples[7].ts", "samples[8].tokens_per_s"}
    assert JobMetric.objects.count() == 0


def test_unknown_node_rejects_the_batch(api, job):
    batch = samples(3)
    batch[2]["node"] = "ghost-9"
    response = api("ada").post(f"/api/v1/jobs/{job.pk}/metrics/", {"samples": batch}, format="json")
    assert response.status_code == 400 and "samples[2].node" in response.json()
    assert JobMetric.objects.count() == 0 and NodeStepMetric.objects.count() == 0


@pytest.mark.parametrize("body", [[], {"samples": []}, {"samples": "x"}, {"other": 1}])
def test_malformed_batches_are_400(api, job, body):
    assert (
        api("ada").post(f"/api/v1/jobs/{job.pk}/metrics/", body, format="json").status_code == 400
    )


def test_non_finite_loss_is_stored_as_evidence(api, job):
    raw = json.dumps(
        {
            "samples": [
                {
                    "ts": iso(T0),
                    "step": 1,
                    "step_time_s": 10,
                    "tokens_per_s": 1e5,
                    "loss": float("nan"),
                },
                {
                    "ts": iso(T0 + dt.timedelta(seconds=10)),
                    "step": 2,
                    "step_time_s": 10,
                    "tokens_per_s": 1e5,
                    "loss": "Infinity",
                    "grad_norm": float("-inf"),
                },
            ]
        }
    )
    assert "NaN" in raw
    response = api("ada").post(
        f"/api/v1/jobs/{job.pk}/metrics/", raw, content_type="application/json"
    )
    assert response.status_code == 202, response.json()
    rows = list(JobMetric.objects.filter(job=job).order_by("ts").values_list("loss", "nonfinite"))
    assert rows == [(None, "loss=NaN"), (None, "loss=Infinity grad_norm=-Infinity")]
    points = api("mia").get(f"/api/v1/jobs/{job.pk}/metrics/").json()["points"]
    assert [p["loss"] for p in points] == ["NaN", "Infinity"]


def test_get_metrics_computes_mfu_and_downsamples(api, job):
    api("ada").post(f"/api/v1/jobs/{job.pk}/metrics/", {"samples": samples(3000)}, format="json")
    client = api("mia")
    full = client.get(f"/api/v1/jobs/{job.pk}/metrics/?max_points=10000").json()["points"]
    assert len(full) == 3000
    expected = 6 * 70e9 * 1e5 / (32 * 989.4e12)  # flops_per_token = 6 × n_params
    assert math.isclose(full[0]["mfu"], expected, rel_tol=1e-12)
    assert full[0]["ts"] == "2026-11-23T08:00:00Z"
    small = client.get(f"/api/v1/jobs/{job.pk}/metrics/?max_points=500").json()["points"]
    assert 2 < len(small) <= 500
    assert small[0]["ts"] == full[0]["ts"] and small[-1]["ts"] == full[-1]["ts"]
    start, end = iso(T0 + dt.timedelta(seconds=100)), iso(T0 + dt.timedelta(seconds=200))
    window = client.get(f"/api/v1/jobs/{job.pk}/metrics/?start={start}&end={end}").json()["points"]
    assert [p["step"] for p in window] == list(range(10, 20))


def test_downsampling_keeps_a_spike(api, job):
    batch = samples(5000)
    batch[2345]["tokens_per_s"] = 5e5
    api("ada").post(f"/api/v1/jobs/{job.pk}/metrics/", {"samples": batch}, format="json")
    points = api("mia").get(f"/api/v1/jobs/{job.pk}/metrics/?max_points=100").json()["points"]
    assert max(p["tokens_per_s"] for p in points) == 5e5


@pytest.mark.parametrize(
    "query", ["max_points=0", "max_points=10001", "max_points=x", "start=yesterday"]
)
def test_bad_metric_query_is_400(api, job, query):
    response = api("mia").get(f"/api/v1/jobs/{job.pk}/metrics/?{query}")
    assert response.status_code == 400
    assert query.split("=")[0] in response.json()


def test_checkpoints_are_idempotent(api, job):
    body = {"step": 1000, "saved_at": iso(T0), "blocking_s": 4.5, "size_bytes": 10**12}
    client = api("ada")
    assert (
        client.post(f"/api/v1/jobs/{job.pk}/checkpoints/", body, format="json").status_code == 201
    )
    assert (
        client.post(f"/api/v1/jobs/{job.pk}/checkpoints/", body, format="json").status_code == 200
    )
    assert Checkpoint.objects.filter(job=job).count() == 1
    job.refresh_from_db()
    assert job.last_checkpoint_at == T0
    bad = client.post(
        f"/api/v1/jobs/{job.pk}/checkpoints/", {**body, "blocking_s": -1}, format="json"
    )
    assert bad.status_code == 400 and "blocking_s" in bad.json()


@override_settings(KUAE_MAX_BODY_BYTES=4096, DATA_UPLOAD_MAX_MEMORY_SIZE=4096)
def test_bodies_over_the_limit_are_413_compressed_or_not(api, job):
    client = api("ada")
    big = json.dumps({"samples": samples(200)})
    assert len(big) > 4096
    assert (
        client.post(
            f"/api/v1/jobs/{job.pk}/metrics/", big, content_type="application/json"
        ).status_code
        == 413
    )
    packed = gzip.compress(big.encode())
    assert len(packed) < 4096
    response = client.post(
        f"/api/v1/jobs/{job.pk}/metrics/",
        packed,
        content_type="application/json",
        HTTP_CONTENT_ENCODING="gzip",
    )
    assert response.status_code == 413
    assert JobMetric.objects.count() == 0


def test_gzip_bodies_are_accepted(api, job):
    packed = gzip.compress(json.dumps({"samples": samples(20)}).encode())
    response = api("ada").post(
        f"/api/v1/jobs/{job.pk}/metrics/",
        packed,
        content_type="application/json",
        HTTP_CONTENT_ENCODING="gzip",
    )
    assert response.status_code == 202 and JobMetric.objects.count() == 20


def test_metric_retention_keeps_jobs_and_latest_values(api, job):
    from django.utils import timezone

    from apps.jobs.services import job_metrics_prune

    now = timezone.now()
    old = samples(5, start=now - dt.timedelta(days=100), every=60)
    new = samples(5, start=now - dt.timedelta(days=1), every=60)
    node_old = [{**s, "node": "gpu000", "compute_s": 1.0} for s in old]
    api("ada").post(
        f"/api/v1/jobs/{job.pk}/metrics/", {"samples": old + new + node_old}, format="json"
    )
    assert job_metrics_prune(older_than_days=90, now=now) == 10
    assert JobMetric.objects.filter(job=job).count() == 5 and NodeStepMetric.objects.count() == 0
    job.refresh_from_db()
    assert job.last_metric_at is not None


def test_extremes_are_kept_per_bucket_across_batches(api, job):
    client = api("ada")
    first = samples(15, every=10)  # 150 s: half of one 5-minute bucket
    first[4]["tokens_per_s"] = 9e4
    second = samples(15, start=T0 + dt.timedelta(seconds=150), every=10)
    second[7]["tokens_per_s"] = 3e5
    second[8]["tokens_per_s"] = 5e4
    for batch in (first, second, first):
        client.post(f"/api/v1/jobs/{job.pk}/metrics/", {"samples": batch}, format="json")
    flagged = list(
        JobMetric.objects.filter(job=job, extreme=True).order_by("ts").values_list("tokens_per_s")
    )
    assert flagged == [(3e5,), (5e4,)]


def test_long_windows_read_preselected_extremes(api, job, django_assert_max_num_queries):
    batch = samples(20_000, every=5)  # ~28 hours at 5 s
    batch[12_345]["tokens_per_s"] = 7e5
    api("ada").post(f"/api/v1/jobs/{job.pk}/metrics/", {"samples": batch}, format="json")
    with django_assert_max_num_queries(8):
        points = api("mia").get(f"/api/v1/jobs/{job.pk}/metrics/?max_points=300").json()["points"]
    assert len(points) <= 300
    assert points[0]["ts"] == batch[0]["ts"] and points[-1]["ts"] == batch[-1]["ts"]
    assert max(p["tokens_per_s"] for p in points) == 7e5


def test_hourly_sums_follow_the_samples_and_ignore_repeats(api, job):
    """JobMetricHour holds Σ step_time and Σ tokens/s × step_time per hour (the MFU weights)."""
    from apps.jobs.models import JobMetricHour

    def sample(minute: int, tps: float, step_time: float) -> dict:
        return {
            "ts": f"2026-11-23T08:{minute:02d}:00Z",
            "step": minute,
            "step_time_s": step_time,
            "tokens_per_s": tps,
        }

    client = api("ada")
    url = f"/api/v1/jobs/{job.pk}/metrics/"
    first = {"samples": [sample(0, 100.0, 2.0), sample(30, 300.0, 1.0)]}
    assert client.post(url, first, format="json").status_code == 202
    assert client.post(url, first, format="json").status_code == 202  # a retry
    later = {
        "samples": [sample(59, 200.0, 1.0), {**sample(0, 1.0, 1.0), "ts": "2026-11-23T09:00:00Z"}]
    }
    assert client.post(url, later, format="json").status_code == 202
    hours = list(
        JobMetricHour.objects.filter(job=job)
        .order_by("hour")
        .values_list("hour__hour", "n", "step_s_sum", "tps_step_sum")
    )
    assert hours == [(8, 3, 4.0, 100 * 2 + 300 + 200), (9, 1, 1.0, 1.0)]


def test_nodes_must_be_this_clusters(api, nodes, job):
    """Another cluster's node is refused as an unknown one, on create and on a PATCH (whose
    cluster is the job's), with the words incidents use too."""
    other = cluster_create(name="c2", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8)
    nodes_register(cluster=other, specs=[NodeSpec(hostname="far001")])
    body = {"name": "run-2", "cluster": "c1", "gpu_count": 8, "nodes": ["gpu000", "far001"]}
    response = api("otto").post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 400
    assert response.json() == {"nodes": ["unknown in cluster c1: far001"]}
    patched = api("ada").patch(f"/api/v1/jobs/{job.pk}/", {"nodes": ["far001"]}, format="json")
    assert patched.status_code == 400
    assert patched.json() == {"nodes": ["unknown in cluster c1: far001"]}
    assert Job.objects.count() == 1 and job.nodes.count() == 4


def test_patch_to_another_jobs_external_id_is_400_naming_it(api, cluster, job):
    """schemathesis: `PATCH jobs/{id}/` with `external_id` (and `status: pending`) taking the
    scheduler id of another job in the cluster was the unique constraint's 500."""
    other, _ = job_create(cluster=cluster, name="other", gpu_count=8, external_id="4242")
    response = api("ada").patch(
        f"/api/v1/jobs/{job.pk}/", {"external_id": "4242", "status": "pending"}, format="json"
    )
    assert response.status_code == 400 and "external_id" in response.json(), response.content
    job.refresh_from_db()
    assert (job.external_id, job.status) == ("", "running")
    mine = api("ada").patch(
        f"/api/v1/jobs/{other.pk}/", {"external_id": "4242", "status": "pending"}, format="json"
    )
    assert mine.status_code == 200  # its own id again is no conflict
