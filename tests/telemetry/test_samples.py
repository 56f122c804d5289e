"""Telemetry intake endpoints: latest values, previous values, events, rollups, no doubles."""

from __future__ import annotations

import datetime as dt

import pytest

from apps.fleet.models import GPU, Node
from apps.fleet.services import NodeSpec, nodes_register
from apps.telemetry.models import NodeRollup, TelemetryEvent
from tests.support import DCGM_SAMPLE

pytestmark = pytest.mark.django_db

SAMPLE = DCGM_SAMPLE
T0 = dt.datetime(2026, 11, 23, 8, 0, 5, tzinfo=dt.UTC)
NO_PORTS = {
    "ports": 0,
    "ports_stale": 0,
    "host": 0,
    "host_stale": 0,
    "host_skipped": 0,
}  # samples alone


def iso(t: dt.datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def sample(node: str, gpu: int, t: dt.datetime, **metrics) -> dict:
    return {"node": node, "gpu": gpu, "ts": iso(t), "metrics": metrics}


def post(api, body):  # noqa: ANN001, ANN201
    return api("ada").post("/api/v1/ingest/telemetry/", body, format="json")


def test_latest_previous_and_last_seen(api, nodes):
    body = {
        "samples": [
            sample("gpu000", 0, T0, temp_c=60, gpu_util=95),
            sample("gpu000", 0, T0 + dt.timedelta(seconds=15), temp_c=62),
            sample("gpu001", 7, T0, temp_c=50),
        ]
    }
    response = post(api, body)
    assert response.status_code == 202
    assert response.json() == {"accepted": 3, "applied": 3, "stale": 0, "events": 0, **NO_PORTS}
    gpu = GPU.objects.get(node__hostname="gpu000", index=0)
    assert gpu.metrics == {"temp_c": 62, "gpu_util": 95}  # merged: gpu_util kept
    assert gpu.prev_metrics == {"temp_c": 60, "gpu_util": 95}
    assert gpu.updated_at == T0 + dt.timedelta(seconds=15) and gpu.prev_at == T0
    assert Node.objects.get(hostname="gpu000").last_seen_at is not None
    detail = api("mia").get("/api/v1/nodes/gpu000/").json()
    assert detail["gpus"][0]["metrics"]["temp_c"] == 62


def test_the_same_batch_twice_is_applied_once(api, nodes):
    body = {
        "samples": [
            sample("gpu002", g, T0 + dt.timedelta(seconds=s), temp_c=50 + s, xid=79 if s else 0)
            for g in range(8)
            for s in (0, 15)
        ]
    }
    assert post(api, body).json()["applied"] == 16
    again = post(api, body).json()
    assert again == {"accepted": 16, "applied": 0, "stale": 16, "events": 0, **NO_PORTS}
    rollup = NodeRollup.objects.get(node__hostname="gpu002")
    assert rollup.temp_c_n == 16 and rollup.temp_c_min == 50 and rollup.temp_c_max == 65
    assert rollup.mean("temp_c") == pytest.approx(57.5)
    assert TelemetryEvent.objects.filter(kind="xid").count() == 8


def test_xid_event_once_and_ecc_growth(api, nodes):
    seq = [
        sample("gpu003", 1, T0, xid=0, ecc_dbe_total=0),
        sample("gpu003", 1, T0 + dt.timedelta(seconds=15), xid=79, ecc_dbe_total=0),
        sample("gpu003", 1, T0 + dt.timedelta(seconds=30), xid=79, ecc_dbe_total=2),
        sample("gpu003", 1, T0 + dt.timedelta(seconds=45), xid=79, ecc_dbe_total=0),
    ]
    for item in seq:  # one scrape at a time, as an agent posts them
        assert post(api, {"samples": [item]}).status_code == 202
    events = list(TelemetryEvent.objects.order_by("at").values_list("kind", "value", "previous"))
    assert events == [("xid", 79, 0), ("ecc_dbe", 2, 0), ("counter_reset", 0, 2)]


def test_rollups_merge_across_batches(api, nodes):
    post(api, {"samples": [sample("gpu004", 0, T0, power_w=500)]})
    post(api, {"samples": [sample("gpu004", 1, T0 + dt.timedelta(seconds=20), power_w=700)]})
    post(api, {"samples": [sample("gpu004", 0, T0 + dt.timedelta(minutes=5), power_w=100)]})
    rows = list(NodeRollup.objects.filter(node__hostname="gpu004").order_by("bucket"))
    assert [(r.power_w_min, r.power_w_max, r.power_w_n) for r in rows] == [
        (500, 700, 2),
        (100, 100, 1),
    ]
    assert rows[0].mean("power_w") == 600 and rows[0].temp_c_n == 0 and rows[0].temp_c_min is None


def test_huge_integers_are_kept_as_floats(api, nodes):
    for i in range(2):  # the second merges with what the database handed back
        t = T0 + dt.timedelta(seconds=15 * i)
        response = post(api, {"samples": [sample("gpu000", 0, t, nvlink_bw_total=2**70 + i)]})
        assert response.status_code == 202
    value = GPU.objects.get(node__hostname="gpu000", index=0).metrics["nvlink_bw_total"]
    assert value == pytest.approx(2.0**70)


def test_bad_sample_rejects_the_batch(api, nodes):
    body = {
        "samples": [
            sample("gpu000", 0, T0, temp_c=60),
            sample("ghost", 0, T0, temp_c=1),
            sample("gpu000", 9, T0, temp_c=1),
        ]
    }
    response = post(api, body)
    assert response.status_code == 400
    assert set(response.json()) == {"samples[1].node", "samples[2].gpu"}
    assert GPU.objects.get(node__hostname="gpu000", index=0).updated_at is None
    assert NodeRollup.objects.count() == 0


def test_only_agents_post_telemetry(api, nodes):
    body = {"samples": [sample("gpu000", 0, T0, temp_c=60)]}
    assert api("otto").post("/api/v1/ingest/telemetry/", body, format="json").status_code == 403
    assert api(None).post("/api/v1/ingest/telemetry/", body, format="json").status_code == 401


@pytest.fixture
def a017(cluster):  # noqa: ANN001
    return nodes_register(cluster=cluster, specs=[NodeSpec(hostname="gpu-a017")])[0]


def test_prometheus_intake_of_the_real_sample(api, a017, django_assert_max_num_queries):
    client = api("ada")
    text = SAMPLE.read_text()
    with django_assert_max_num_queries(16):  # constant whatever the batch size
        response = client.post("/api/v1/ingest/prometheus/", text, content_type="text/plain")
    assert response.status_code == 202, response.json()
    assert response.json()["accepted"] == 8
    gpu = GPU.objects.get(node=a017, index=3)
    assert gpu.uuid.startswith("GPU-") and gpu.model == "NVIDIA H100 80GB HBM3"
    assert gpu.metrics["sm_clock_mhz"] == 1980 and "DCGM_FI_DEV_MEM_CLOCK" in gpu.metrics
    assert NodeRollup.objects.get(node=a017).gpu_util_n == 8


def test_prometheus_errors(api, a017):
    client = api("ada")
    bad = client.post(
        "/api/v1/ingest/prometheus/", 'DCGM_FI_DEV_GPU_TEMP{gpu="0" 55\n', content_type="text/plain"
    )
    assert bad.status_code == 400 and bad.json()["line"] == ["1"]
    unknown = client.post(
        "/api/v1/ingest/prometheus/?node=ghost", SAMPLE.read_text(), content_type="text/plain"
    )
    assert unknown.status_code == 400 and "samples[0].node" in unknown.json()
    empty = client.post("/api/v1/ingest/prometheus/", "# nothing\n", content_type="text/plain")
    assert empty.status_code == 400 and "body" in empty.json()
    assert (
        client.post(
            "/api/v1/ingest/prometheus/?ts=soon", SAMPLE.read_text(), content_type="text/plain"
        ).status_code
        == 400
    )


def test_queries_per_batch_do_not_grow_with_its_samples(api, cluster):
    """A batch of 8 nodes and one of 128 (1,024 GPUs) take the same SQL statements: GPUs
    read and locked at once, values, events and rollups written in bulk."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    hosts = [f"q{i:03d}" for i in range(128)]
    nodes_register(cluster=cluster, specs=[NodeSpec(hostname=h, gpu_count=8) for h in hosts])

    def sweep(names: list[str], at: dt.datetime, ecc: int) -> tuple[int, dict]:
        body = {
            "samples": [
                sample(h, g, at, temp_c=60, gpu_util=90, ecc_sbe_total=ecc, xid=0)
                for h in names
                for g in range(8)
            ]
        }
        with CaptureQueriesContext(connection) as queries:
            response = post(api, body)
        assert response.status_code == 202, response.content
        return len(queries), response.json()

    sweep(hosts, T0, ecc=1)  # every GPU has values: the next ones grow a counter
    small, small_result = sweep(hosts[:8], T0 + dt.timedelta(seconds=15), ecc=2)
    large, large_result = sweep(hosts, T0 + dt.timedelta(seconds=30), ecc=3)
    assert small_result == {"accepted": 64, "applied": 64, "stale": 0, "events": 64, **NO_PORTS}
    assert large_result == {
        "accepted": 1024, "applied": 1024, "stale": 0, "events": 1024, **NO_PORTS,
    }  # fmt: skip
    assert small == large


@pytest.mark.parametrize(
    "item",
    [
        sample("gpu000", 0, T0, temp_c=60, power_w=612.5, tensor_active=0.4),
        {"node": " gpu000 ", "gpu": 1.0, "ts": iso(T0), "metrics": {"temp_c": 60}},
        {**sample("gpu000", 2, T0, temp_c=60), "pci_bus": "17:00.0"},
        sample("gpu000", 3, T0, nvlink_bw_total=2**70, ecc_sbe_total=-(2**63)),
        {"node": "gpu000", "gpu": 4, "ts": T0.timestamp(), "metrics": {"temp_c": 60}},
    ],
)
def test_the_fast_reading_of_a_batch_is_the_careful_one(item):
    """Well-formed samples take a fast path; whatever it reads, the field-by-field path
    reads the same (and what it leaves, that path normalises)."""
    from apps.telemetry.intake import _parse_each, parse_telemetry_batch

    now = T0 + dt.timedelta(minutes=1)
    assert parse_telemetry_batch({"samples": [item]}, now=now) == _parse_each([item], now)
