"""Honest gaps per exporter (docs/integrations.md, Exporters and their mapping files;
docs/checks.md, Blind results): a Gaudi node says on its page what its exporter does not
report, and `gpu_errors` stores `error` — "not checked" — for its GPUs, never a pass and
never an incident; an AMD MI3xx GPU's temperature is named junction; and an AMD GPU's
uncorrectable-ECC growth drains its node as an NVIDIA one's does.

No Gaudi or AMD exporter runs here: the text is in the vendors' published shape — Intel's
Prometheus Metric Exporter page,
https://docs.habana.ai/en/latest/Orchestration/Prometheus_Metric_Exporter.html (no host
label: posted with ?node=), and AMD's metric list,
https://github.com/ROCm/device-metrics-exporter/blob/main/docs/configuration/metricslist.md
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse

from apps.fleet.models import GPU, Node
from apps.health.models import CheckResult, CheckRun
from apps.health.services import run_execute
from apps.health.services import runs_execute_now as _now
from apps.incidents.models import Incident

pytestmark = pytest.mark.django_db
URL = "/api/v1/ingest/prometheus/"
GAUDI_EXPORTER = "Intel Gaudi metric exporter"


def gaudi_scrape(replays: int = 0) -> str:
    lines = ["# HELP habanalabs_power_mW Current power usage in milliwatts"]
    for i in range(8):
        labels = f'Serial="AN000{i}",UUID="01P0-HL2080A0-15-{i}",id="{i}"'
        lines += [
            f"habanalabs_power_mW{{{labels}}} 412000",
            f"habanalabs_temperature_onchip{{{labels}}} 52",
            f"habanalabs_utilization{{{labels}}} 88",
            f"habanalabs_memory_used_bytes{{{labels}}} 68719476736",
            f"habanalabs_pcie_replay_count{{{labels}}} {replays}",
            f'habanalabs_nic_port_status{{{labels},port="0"}} 1',
            f"habanalabs_pending_rows_with_double_bit_ecc_errors{{{labels}}} 0",
        ]
    return "\n".join(lines) + "\n"


def amd_mi300_scrape(host: str, uncorrectable: int = 0) -> str:
    """AMD device-metrics-exporter text for 8 MI300X; GPU 5's uncorrectable ECC count is
    `uncorrectable`."""
    lines = []
    for i in range(8):
        labels = f'card_model="0x74a1",gpu_id="{i}",hostname="{host}",serial_number="SN{i}"'
        lines += [  # MI3xx: junction temperature only, no edge
            f"gpu_junction_temperature{{{labels}}} 71",
            f"gpu_power_usage{{{labels}}} 612",
            f"gpu_ecc_correct_total{{{labels}}} 0",
            f"gpu_ecc_uncorrect_total{{{labels}}} {uncorrectable if i == 5 else 0}",
            f"gpu_ecc_correct_xgmi_wafl{{{labels}}} 0",
            f"gpu_ecc_uncorrect_xgmi_wafl{{{labels}}} 0",
        ]
    return "\n".join(lines) + "\n"


def run_gpu_errors(cluster) -> CheckRun:  # noqa: ANN001
    (run,) = _now(cluster=cluster, kinds=["gpu_errors"], requested_by="test")
    assert run.status == "done", run.error
    return run


@pytest.fixture
def browser(client, users):  # noqa: ANN001, ANN201
    client.force_login(users["mia"])
    return client


def test_a_gaudi_node_says_what_its_exporter_does_not_report(cluster, fleet, browser):  # noqa: ANN001
    agent = fleet["agent"]
    state = Node.objects.get(hostname="h10").state
    for _ in range(2):
        answer = agent.post(f"{URL}?node=h10", gaudi_scrape(), content_type="text/plain")
        assert answer.status_code == 202, answer.json()
    gpus = GPU.objects.filter(node__hostname="h10")
    assert {(g.vendor, g.source) for g in gpus} == {("intel", "gaudi")}
    assert gpus.get(index=3).uuid == "01P0-HL2080A0-15-3"

    run_gpu_errors(cluster)
    results = CheckResult.objects.filter(kind="gpu_errors", target__startswith="gpu:h10/")
    assert results.count() == 8
    for result in results:
        assert result.status == "error", (result.target, result.message)
        assert result.message.startswith(f"not checked: ECC not reported by {GAUDI_EXPORTER}")
        assert result.details["blind"] is True
    assert not Incident.objects.exists()
    assert Node.objects.get(hostname="h10").state == state
    # An NVIDIA-reported node beside it still passes (nothing blind there).
    assert not CheckResult.objects.filter(
        kind="gpu_errors", target__startswith="gpu:h09/", status="error"
    ).exists()

    html = browser.get("/nodes/h10/").content.decode()
    assert f"ECC not reported by {GAUDI_EXPORTER}</span>" in html
    assert f"Gaudi links CRC not reported by {GAUDI_EXPORTER}</span>" in html
    assert f"Row remap not reported by {GAUDI_EXPORTER}</span>" in html
    assert "PCIe replay not reported" not in html  # Gaudi's exporter publishes it
    assert "docs/dcgm-counters.csv" not in html  # NVIDIA's advice, not Gaudi's
    assert "junction" in html
    evidence = browser.get(reverse("health-node-evidence", args=["h10"])).content.decode()
    assert 'res-error">Not checked</span>' in evidence
    assert f"not checked: ECC not reported by {GAUDI_EXPORTER}" in evidence


def test_a_blind_gaudi_gpu_still_warns_on_what_it_can_see(cluster, fleet):  # noqa: ANN001
    agent = fleet["agent"]
    for replays in (0, 10_000):  # PCIe replays: published, and growing
        answer = agent.post(f"{URL}?node=h11", gaudi_scrape(replays), content_type="text/plain")
        assert answer.status_code == 202, answer.json()
    first = run_gpu_errors(cluster)
    result = CheckResult.objects.get(kind="gpu_errors", target="gpu:h11/0")
    assert result.status == "warn" and "PCIe replays" in result.message
    incident = Incident.objects.get()
    assert incident.severity == "sev3" and incident.status == "open"
    # The replays stop: its GPUs are blind again, which holds the sev3 incident open no
    # longer than a pass would (docs/checks.md, Blind results).
    answer = agent.post(f"{URL}?node=h11", gaudi_scrape(10_000), content_type="text/plain")
    assert answer.status_code == 202, answer.json()
    run_gpu_errors(cluster)
    assert CheckResult.objects.get(kind="gpu_errors", target="gpu:h11/0").status == "error"
    assert Incident.objects.get().status == "open"
    (run,) = CheckRun.objects.bulk_create(
        [CheckRun(cluster=cluster, kind="gpu_errors", requested_by="test")]
    )
    later = first.started_at + dt.timedelta(minutes=45)
    assert run_execute(run_id=run.pk, now=later).status == "done"
    assert Incident.objects.get().status == "resolved"


def test_an_amd_mi3xx_gpu_names_its_temperature_junction(cluster, fleet, browser):  # noqa: ANN001
    answer = fleet["agent"].post(URL, amd_mi300_scrape("h12"), content_type="text/plain")
    assert answer.status_code == 202, answer.json()
    gpu = GPU.objects.get(node__hostname="h12", index=0)
    assert (gpu.vendor, gpu.model, gpu.source) == ("amd", "AMD Instinct MI300X", "amd")
    assert gpu.metrics["temp_c"] == 71
    html = browser.get("/nodes/h12/").content.decode()
    assert 'title="which temperature the exporter published">junction</span>' in html
    assert "ECC not reported" not in html  # AMD publishes ECC totals
    run_gpu_errors(cluster)
    # AMD reports ECC and XGMI (its ECC block): nothing blind, a pass.
    assert CheckResult.objects.get(kind="gpu_errors", target="gpu:h12/0").status == "pass"


def test_amd_uncorrectable_ecc_growth_drains_the_node(cluster, fleet):  # noqa: ANN001
    agent = fleet["agent"]
    for uncorrectable in (0, 4):  # two readings: the counter grows by 4
        answer = agent.post(URL, amd_mi300_scrape("h09", uncorrectable), content_type="text/plain")
        assert answer.status_code == 202, answer.json()
        run_gpu_errors(cluster)
    result = CheckResult.objects.get(kind="gpu_errors", target="gpu:h09/5")
    assert result.status != "pass"
    assert Incident.objects.get().category == "gpu_hbm"
    assert Node.objects.get(hostname="h09").state == "drained"
