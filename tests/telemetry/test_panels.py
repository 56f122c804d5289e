"""The node page says what the checks cannot see (fields a GPU never reported) and explains
each XID event from NVIDIA's catalogue, with its source."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.fleet.models import GPU
from apps.telemetry.models import TelemetryEvent
from apps.telemetry.monitored import needed_fields, reporting_gaps

pytestmark = pytest.mark.django_db

FULL = {
    "temp_c": 50,
    "mem_temp_c": 45,
    "ecc_dbe_total": 0,
    "nvlink_crc_errors": 0,
    "pcie_replay_total": 0,
    "row_remap_failure": 0,
}
# dcgm-exporter's default counters file: no ECC, no NVLink error counters.
DEFAULT_FILE = {"temp_c": 50, "mem_temp_c": 45, "pcie_replay_total": 0, "row_remap_failure": 0}


def test_reporting_gaps_per_node_and_per_gpu():
    gaps, silent = reporting_gaps(
        [(0, DEFAULT_FILE), (1, {**DEFAULT_FILE, "ecc_dbe_total": 0}), (2, {}), (3, DEFAULT_FILE)]
    )
    assert silent == (2,)
    by_label = {g.needed.label: g for g in gaps}
    assert set(by_label) == {"ECC", "NVLink CRC"}
    assert by_label["ECC"].gpus == (0, 3) and not by_label["ECC"].every
    assert by_label["NVLink CRC"].gpus == (0, 1, 3) and by_label["NVLink CRC"].every
    assert by_label["ECC"].needed.check == "gpu_errors"
    assert reporting_gaps([(i, FULL) for i in range(8)]) == ([], ())
    everything_missing, none = reporting_gaps([(0, {"gpu_util": 3})])
    assert [g.needed for g in everything_missing] == list(needed_fields()) and none == ()
    assert reporting_gaps([(0, None), (1, {})]) == ([], (0, 1))


def test_reporting_gaps_name_the_exporter_that_cannot_report_a_field():
    gpus = [(0, {"temp_c": 50, "pcie_replay_total": 0}), (1, DEFAULT_FILE)]
    gaps, _ = reporting_gaps(gpus, {0: "gaudi", 1: "dcgm"})
    said = {(g.needed.label, g.exporter): g.gpus for g in gaps}
    gaudi = "Intel Gaudi metric exporter"
    assert said[("ECC", gaudi)] == (0,) and said[("ECC", "")] == (1,)
    assert said[("Row remap", gaudi)] == (0,) and ("Row remap", "") not in said
    assert ("PCIe replay", gaudi) not in said  # Gaudi's exporter publishes it
    assert said[("Memory temperature", gaudi)] == (0,)


@pytest.fixture
def browser(client, users):  # noqa: ANN001
    client.force_login(users["mia"])
    return client


def test_the_node_page_says_what_is_not_reported(browser, nodes):
    node = nodes[0]
    for gpu in GPU.objects.filter(node=node):
        metrics = {} if gpu.index == 7 else dict(DEFAULT_FILE)
        if gpu.index == 1:
            metrics.pop("temp_c")
        GPU.objects.filter(pk=gpu.pk).update(metrics=metrics)
    html = browser.get(f"/nodes/{node.hostname}/").content.decode()
    assert "ECC not reported</span> by any GPU: the exporter&#x27;s counters file omits it" in html
    assert "NVLink CRC not reported</span> by any GPU" in html
    assert "Temperature not reported</span> by GPU 1:" in html
    assert "No telemetry</span> from GPU 7 yet" in html
    assert "PCIe replay not reported" not in html and "docs/dcgm-counters.csv" in html
    assert "not checked, rather than passing" in html

    fine = nodes[1]
    GPU.objects.filter(node=fine).update(metrics=FULL)
    html = browser.get(f"/nodes/{fine.hostname}/").content.decode()
    assert "not reported" not in html and "No telemetry" not in html


def test_each_xid_event_shows_its_mnemonic_action_and_source(
    browser, nodes, django_assert_max_num_queries
):
    node = nodes[2]
    t = timezone.now() - dt.timedelta(minutes=5)

    def event(minutes: int, **fields: object) -> TelemetryEvent:
        base = {"node": node, "at": t + dt.timedelta(minutes=minutes), "kind": "xid"}
        return TelemetryEvent(**{**base, **fields})

    TelemetryEvent.objects.bulk_create(
        [
            event(0, gpu=3, value=79, code=79, source="kernel", pci_bus="0000:48:00.0",
                  message="pid=2417, name=python3, GPU has fallen off the bus."),
            event(1, gpu=0, value=13, code=13, previous=0),  # from the exporter's gauge
            event(2, gpu=None, value=999, code=999, source="kernel", pci_bus="0000:9b:00.0"),
            event(3, gpu=5, value=154, code=154, source="kernel", pci_bus="0000:68:00.0",
                  message="GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot "
                  "Required)"),
            event(4, gpu=1, kind="nvlink_crc", value=250, previous=60),
        ]
    )  # fmt: skip
    browser.get(f"/nodes/{node.hostname}/")  # the first read sets up the repairs' cursor
    with django_assert_max_num_queries(19):  # none per event (see tests/reports/test_pages)
        response = browser.get(f"/nodes/{node.hostname}/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS" in html and "Reboot the node" in html
    assert "pid=2417, name=python3, GPU has fallen off the bus." in html
    assert "ROBUST_CHANNEL_GR_EXCEPTION" in html and "Restart the application" in html
    assert "Not in NVIDIA's XID catalogue" in html
    assert "0000:9b:00.0" in html  # no GPU index known yet: its PCI address
    assert "GPU_RECOVERY_ACTION_CHANGED" in html
    assert html.count("Reboot the node") == 2  # XID 154 takes the action its message names
    assert "NVLink CRC errors grew" in html
    assert html.count("<td>Kernel log</td>") == 3 and html.count("<td>Exporter</td>") == 2
