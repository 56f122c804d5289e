"""`POST ingest/events/`: kernel-log XIDs, placed on GPUs by PCI address, stored once; the
new error counters and the health check's read path."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.fleet.models import GPU, Node
from apps.fleet.services import NodeSpec, nodes_register
from apps.telemetry.models import TelemetryEvent
from tests.support import DCGM_SAMPLE

pytestmark = pytest.mark.django_db

URL = "/api/v1/ingest/events/"
SECOND = dt.timedelta(seconds=1)


def iso(t: dt.datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def xid(node: str, t: dt.datetime, code: int, **fields: object) -> dict:
    return {"node": node, "ts": iso(t), "kind": "xid", "code": code, **fields}


@pytest.fixture
def a017(cluster):  # noqa: ANN001
    """gpu-a017, whose exporter (the real sample) reports PCI addresses 18:00.0 … 88:00.0."""
    return nodes_register(cluster=cluster, specs=[NodeSpec(hostname="gpu-a017")])[0]


@pytest.fixture
def scraped(api, a017):  # noqa: ANN001
    """gpu-a017 after one dcgm-exporter scrape: its GPUs are known by PCI address."""
    text = DCGM_SAMPLE.read_text()
    response = api("ada").post("/api/v1/ingest/prometheus/", text, content_type="text/plain")
    assert response.status_code == 202
    return a017


def test_prometheus_and_json_telemetry_keep_each_gpus_pci_address(api, scraped, nodes):
    assert dict(GPU.objects.filter(node=scraped).values_list("index", "pci_bus")) == {
        i: f"0000:{0x18 + 0x10 * i:02x}:00.0" for i in range(8)
    }
    body = {
        "samples": [
            {
                "node": "gpu000",
                "gpu": 5,
                "ts": iso(timezone.now()),
                "metrics": {"temp_c": 40},
                "pci_bus": "00000000:AB:00.0",
            }
        ]
    }
    assert api("ada").post("/api/v1/ingest/telemetry/", body, format="json").status_code == 202
    assert GPU.objects.get(node__hostname="gpu000", index=5).pci_bus == "0000:ab:00.0"
    # A later sample without the address keeps the one known.
    body["samples"][0].pop("pci_bus")
    body["samples"][0]["ts"] = iso(timezone.now() + dt.timedelta(seconds=1))
    assert api("ada").post("/api/v1/ingest/telemetry/", body, format="json").status_code == 202
    assert GPU.objects.get(node__hostname="gpu000", index=5).pci_bus == "0000:ab:00.0"


def test_a_kernel_xid_finds_its_gpu_by_pci_address_and_is_stored_once(api, scraped):
    t = timezone.now() - dt.timedelta(minutes=1)
    body = {
        "events": [
            xid("gpu-a017", t, 79, pci_bus="PCI:0000:48:00", message="GPU has fallen off the bus."),
            xid("gpu-a017", t, 48, gpu=6),
            xid("gpu-a017", t, 13, pci_bus="0000:28:00", message="pid=7, name=python, Ch 0000000a"),
        ]
    }
    first = api("ada").post(URL, body, format="json")
    assert first.status_code == 202, first.json()
    assert first.json() == {"accepted": 3, "events": 3}
    again = api("ada").post(URL, body, format="json")  # the agent re-sends after a timeout
    assert again.status_code == 202 and again.json() == {"accepted": 3, "events": 0}
    rows = {
        e.code: e
        for e in TelemetryEvent.objects.filter(node=scraped, source=TelemetryEvent.Source.KERNEL)
    }
    assert len(rows) == 3
    assert (rows[79].gpu, rows[79].pci_bus, rows[79].kind, rows[79].value) == (
        3,
        "0000:48:00.0",
        "xid",
        79,
    )
    assert rows[79].message == "GPU has fallen off the bus." and rows[79].at == t
    assert (rows[48].gpu, rows[48].pci_bus) == (6, "") and rows[13].gpu == 1
    assert Node.objects.get(pk=scraped.pk).last_seen_at is not None


def test_same_code_twice_on_one_gpu_is_two_events_and_other_codes_differ(api, scraped):
    t = timezone.now() - dt.timedelta(minutes=2)
    body = {
        "events": [
            xid("gpu-a017", t, 119, pci_bus="0000:18:00"),
            xid("gpu-a017", t + dt.timedelta(microseconds=1), 119, pci_bus="0000:18:00"),
            xid("gpu-a017", t, 154, pci_bus="0000:18:00"),
            xid("gpu-a017", t, 119, pci_bus="0000:18:00"),  # the same line twice in a batch
        ]
    }
    assert api("ada").post(URL, body, format="json").json() == {"accepted": 4, "events": 3}


def test_an_address_no_gpu_has_yet_is_kept_and_placed_when_telemetry_tells(api, a017):
    t = timezone.now() - dt.timedelta(minutes=1)
    body = {"events": [xid("gpu-a017", t, 79, pci_bus="0000:58:00")]}
    assert api("ada").post(URL, body, format="json").json() == {"accepted": 1, "events": 1}
    event = TelemetryEvent.objects.get(node=a017)
    assert event.gpu is None and event.pci_bus == "0000:58:00.0"
    assert api("ada").post(URL, body, format="json").json()["events"] == 0  # still once
    text = DCGM_SAMPLE.read_text()
    api("ada").post("/api/v1/ingest/prometheus/", text, content_type="text/plain")
    event.refresh_from_db()
    assert event.gpu == 4  # 00000000:58:00.0 is GPU 4 in the exporter's labels


def test_bad_input_is_named_and_nothing_is_stored(api, scraped):
    t = timezone.now()
    cases = [
        ({"events": [xid("gpu-a017", t, 79, gpu=0), xid("ghost", t, 79, gpu=0)]}, "events[1].node"),
        ({"events": [xid("gpu-a017", t, 79, gpu=8)]}, "events[0].gpu"),
        ({"events": [xid("gpu-a017", t, 79)]}, "events[0].gpu"),
        ({"events": [xid("gpu-a017", t + dt.timedelta(minutes=6), 79, gpu=0)]}, "events[0].ts"),
        ({"events": [xid("gpu-a017", t, 79, gpu=0, kind="ecc")]}, "events[0].kind"),
        ({"events": [xid("gpu-a017", t, 79, pci_bus="PCI:zz")]}, "events[0].pci_bus"),
        ({"events": []}, "events"),
        ({"evts": [1]}, "events"),
    ]
    for body, field in cases:
        response = api("ada").post(URL, body, format="json")
        assert response.status_code == 400, (field, response.json())
        assert field in response.json(), (field, response.json())
    assert not TelemetryEvent.objects.exists()


def test_the_batch_bound_is_named(api, scraped):
    t = timezone.now()
    body = {"events": [xid("gpu-a017", t, 13, gpu=0)] * 10_001}
    response = api("ada").post(URL, body, format="json")
    assert response.status_code in (400, 413)
    assert "10000" in str(response.json())
    assert not TelemetryEvent.objects.exists()


def test_only_agents_post_events(api, scraped):
    body = {"events": [xid("gpu-a017", timezone.now(), 79, gpu=0)]}
    assert api("otto").post(URL, body, format="json").status_code == 403
    assert api(None).post(URL, body, format="json").status_code == 401


def test_large_batch_in_few_queries(api, scraped, django_assert_max_num_queries):
    t = timezone.now() - dt.timedelta(minutes=5)
    body = {
        "events": [
            xid("gpu-a017", t + dt.timedelta(milliseconds=i), 13 + i % 3, pci_bus="0000:18:00")
            for i in range(2000)
        ]
    }
    with django_assert_max_num_queries(14):
        response = api("ada").post(URL, body, format="json")
    assert response.json() == {"accepted": 2000, "events": 2000}


def test_the_health_checks_event_read_path_sees_kernel_xids_and_counter_growth(api, scraped):
    """What `apps/health/checks/gpu_errors.gpu_events` reads: node__hostname, gpu, at, kind, value
    (and previous), filtered by recorded_at."""
    since = timezone.now() - dt.timedelta(seconds=1)
    t = timezone.now() - dt.timedelta(minutes=1)
    api("ada").post(URL, {"events": [xid("gpu-a017", t, 79, pci_bus="0000:38:00")]}, format="json")
    after_scrape = timezone.now()
    samples = [
        {
            "node": "gpu-a017",
            "gpu": 0,
            "ts": iso(after_scrape + dt.timedelta(seconds=k)),
            "metrics": {"nvlink_crc_errors": crc, "pcie_replay_total": replay, "xid": 0},
        }
        for k, (crc, replay) in enumerate([(10, 0), (60, 0), (250, 40), (250, 40)], start=1)
    ]
    body = {"samples": samples}
    assert api("ada").post("/api/v1/ingest/telemetry/", body, format="json").status_code == 202
    rows = list(
        TelemetryEvent.objects.filter(node__cluster=scraped.cluster, recorded_at__gt=since)
        .order_by("at", "kind")
        .values_list("node__hostname", "gpu", "kind", "value", "previous")
    )
    assert rows == [
        ("gpu-a017", 2, "xid", 79, None),
        ("gpu-a017", 0, "nvlink_crc", 60, 10),
        ("gpu-a017", 0, "nvlink_crc", 250, 60),
        ("gpu-a017", 0, "pcie_replay", 40, 0),
    ]
    gpu = GPU.objects.get(node=scraped, index=0)
    assert gpu.metrics["nvlink_crc_errors"] == 250 and gpu.prev_metrics["nvlink_crc_errors"] == 250


def test_exporter_xids_still_count_and_carry_their_code(api, nodes):
    t = timezone.now() - dt.timedelta(minutes=1)
    body = {
        "samples": [
            {"node": "gpu000", "gpu": 1, "ts": iso(t), "metrics": {"xid": 0}},
            {"node": "gpu000", "gpu": 1, "ts": iso(t + SECOND), "metrics": {"xid": 94}},
        ]
    }
    assert api("ada").post("/api/v1/ingest/telemetry/", body, format="json").status_code == 202
    event = TelemetryEvent.objects.get()
    assert (event.kind, event.value, event.code, event.source, event.gpu) == (
        "xid",
        94,
        94,
        "exporter",
        1,
    )


def test_kernel_events_per_node_per_hour_are_bounded(api, a017, monkeypatch):
    """issue 41: events grew without a bound; as new nodes per cluster per hour, at most
    EVENTS_PER_NODE_PER_HOUR kernel events per node in any hour
    (docs/operations.md, Limits): past it a 400 naming the node and the bound, and nothing
    of the batch kept."""
    import apps.telemetry.services.events as intake

    assert intake.EVENTS_PER_NODE_PER_HOUR == 10_000
    monkeypatch.setattr(intake, "EVENTS_PER_NODE_PER_HOUR", 3)
    t = timezone.now() - dt.timedelta(minutes=5)
    first = {"events": [xid("gpu-a017", t + i * SECOND, 79, gpu=0) for i in range(3)]}
    assert api("ada").post(URL, first, format="json").json() == {"accepted": 3, "events": 3}
    assert api("ada").post(URL, first, format="json").json()["events"] == 0  # re-sent: fine
    more = {"events": [xid("gpu-a017", t + 10 * SECOND, 79, gpu=0)]}
    refused = api("ada").post(URL, more, format="json")
    assert refused.status_code == 400
    assert (
        "gpu-a017" in refused.json()["events"][0]
        and "per node per hour" in refused.json()["events"][0]
    )
    assert TelemetryEvent.objects.filter(node=a017).count() == 3
    # An hour later the node may report again.
    TelemetryEvent.objects.update(recorded_at=timezone.now() - dt.timedelta(minutes=61))
    assert api("ada").post(URL, more, format="json").json()["events"] == 1
