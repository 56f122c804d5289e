"""NIC ports from node_exporter's `infiniband` collector through the Prometheus intake and
the scraper: the real Debian `prometheus-node-exporter` reads a fake sysfs tree laid out as
the kernel lays out `/sys/class/infiniband`, its `/metrics` text is posted with `?node=`
(or scraped as a node's `exporter_url`), and the stored ports carry the states, rate and
counters by KUAE's names; then a counter grows and a port goes down. Bad series are refused
naming them, and GPU samples of the same text are stored with the ports or not at all.
From a cluster's Prometheus: tests/telemetry/test_prometheus_ports.py."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.utils import timezone

from apps.fleet.models import GPU, Node
from apps.telemetry.models import Port
from apps.telemetry.ports import counter_growth
from apps.telemetry.services import scrape_nodes
from tests.binaries import NodeExporter, write_port
from tests.support import DCGM_SAMPLE

pytestmark = pytest.mark.django_db

URL = "/api/v1/ingest/prometheus/"
T0 = timezone.now().replace(microsecond=0) - dt.timedelta(minutes=10)
# The counters/ files node_exporter 1.5 reads, and a distinct value each, so that a series
# mapped to the wrong name shows.
COUNTERS = {
    "link_downed": 1,
    "link_error_recovery": 2,
    "symbol_error": 3,
    "local_link_integrity_errors": 4,
    "excessive_buffer_overrun_errors": 5,
    "port_rcv_errors": 6,
    "port_xmit_discards": 7,
    "port_rcv_remote_physical_errors": 8,
    "port_xmit_wait": 9_000_000_000,
}
# Read by node_exporter, not by KUAE (data and packet counts, the rest of counters/).
OTHERS = {
    "port_rcv_data": 100,
    "port_xmit_data": 100,
    "port_rcv_packets": 100,
    "port_xmit_packets": 100,
    "VL15_dropped": 11,
    "port_rcv_constraint_errors": 12,
}


def iso(t: dt.datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


@pytest.fixture
def exporter(tmp_path: Path) -> Iterator[tuple[NodeExporter, Path]]:
    sysfs = tmp_path / "sys"
    write_port(sysfs, "mlx5_0", 1, state="4: ACTIVE", phys_state="5: LinkUp",
               rate="400 Gb/sec (4X NDR)", **COUNTERS, **OTHERS)  # fmt: skip
    write_port(sysfs, "mlx5_1", 1, state="1: DOWN", phys_state="3: Disabled",
               rate="10 Gb/sec (4X SDR)", link_downed=0, symbol_error=0)  # fmt: skip
    running = NodeExporter(sysfs, tmp_path / "node_exporter.log")
    yield running, sysfs
    running.stop()


def post(client, text: str, query: str = "?node=gpu000"):  # noqa: ANN001, ANN201
    return client.post(URL + query, text, content_type="text/plain")


def test_the_real_node_exporter_ports_are_stored(api, nodes, exporter):
    node_exporter, sysfs = exporter
    client = api("ada")
    text = node_exporter.scrape()
    assert 'node_infiniband_state_id{device="mlx5_0",port="1"} 4' in text
    first = post(client, text, f"?node=gpu000&ts={iso(T0)}")
    assert first.status_code == 202, first.content
    assert first.json() == {
        "accepted": 0, "applied": 0, "stale": 0, "events": 0, "ports": 2, "ports_stale": 0,
        "host": 0, "host_stale": 0, "host_skipped": 0,
    }  # fmt: skip
    port = Port.objects.get(node__hostname="gpu000", device="mlx5_0", port=1)
    assert (port.state, port.phys_state, port.rate_gbps, port.ts) == ("ACTIVE", "LinkUp", 400, T0)
    assert port.counters == COUNTERS  # by KUAE's names; data, packets and VL15 not kept
    down = Port.objects.get(node__hostname="gpu000", device="mlx5_1", port=1)
    assert (down.state, down.phys_state, down.rate_gbps) == ("DOWN", "Disabled", 10)
    assert down.counters == {"link_downed": 0, "symbol_error": 0}
    # The same scrape again is stale; then symbol errors grow and the first port goes down.
    assert post(client, text, f"?node=gpu000&ts={iso(T0)}").json()["ports_stale"] == 2
    write_port(sysfs, "mlx5_0", 1, state="1: DOWN", phys_state="2: Polling", symbol_error=40,
               link_downed=2)  # fmt: skip
    later = post(
        client, node_exporter.scrape(), f"?node=gpu000&ts={iso(T0 + dt.timedelta(minutes=1))}"
    )
    assert later.status_code == 202 and later.json()["ports"] == 2, later.content
    port.refresh_from_db()
    assert (port.state, port.phys_state, port.rate_gbps) == ("DOWN", "Polling", 400)
    assert port.prev_counters == COUNTERS and port.prev_ts == T0
    growth = {g.name: g.growth for g in counter_growth(port.prev_counters, port.counters)}
    assert growth == {"link_downed": 1, "symbol_error": 37}


def test_dcgm_and_node_exporter_text_together_all_or_nothing(api, nodes):
    client = api("ada")
    ib = 'node_infiniband_state_id{device="mlx5_0",port="1"} 4\n'
    both = post(client, DCGM_SAMPLE.read_text() + ib)
    assert both.status_code == 202, both.content
    assert (both.json()["accepted"], both.json()["ports"]) == (8, 1)
    assert Port.objects.get(node__hostname="gpu000").state == "ACTIVE"
    # A bad port value refuses the GPU samples of the same text too.
    bad = DCGM_SAMPLE.read_text() + 'node_infiniband_state_id{device="mlx5_0",port="2"} 4.5\n'
    refused = post(client, bad, "?node=gpu001")
    assert refused.status_code == 400
    assert "node_infiniband_state_id" in refused.json()["body"][0]
    assert not GPU.objects.filter(node__hostname="gpu001").exclude(metrics={}).exists()
    assert not Port.objects.filter(node__hostname="gpu001").exists()


@pytest.mark.parametrize(
    ("text", "query", "field", "words"),
    [
        ('node_infiniband_state_id{device="mlx5_0",port="1"} 4\n', "", "node", "?node="),
        ('node_infiniband_state_id{device="mlx5_0",port="1"} 4.5\n', "?node=gpu000", "body",
         "node_infiniband_state_id (state) of mlx5_0/1: must be a state's number (0 NOP, 1 DOWN"),
        ('node_infiniband_physical_state_id{device="mlx5_0",port="1"} -1\n', "?node=gpu000",
         "body", "node_infiniband_physical_state_id (phys_state)"),
        ('node_infiniband_symbol_error_total{device="mlx5_0",port="1"} -1\n', "?node=gpu000",
         "body", "node_infiniband_symbol_error_total (symbol_error) of mlx5_0/1: must be ≥ 0"),
        ('node_infiniband_link_downed_total{device="mlx5_0",port="1"} 1.5\n', "?node=gpu000",
         "body", "(link_downed) of mlx5_0/1: must be an integer"),
        ('node_infiniband_rate_bytes_per_second{device="mlx5_0",port="1"} NaN\n', "?node=gpu000",
         "body", "(rate_gbps) of mlx5_0/1: must be a finite number"),
        ('node_infiniband_link_downed_total{device="mlx5_0"} 1\n', "?node=gpu000", "body",
         "node_infiniband_link_downed_total: label port"),
        ('node_infiniband_link_downed_total{device="a b",port="1"} 1\n', "?node=gpu000", "body",
         "label device"),
        ('node_infiniband_state_id{device="mlx5_0",port="1"} 4\n', "?node=ghost", "ports[0].node",
         "unknown node 'ghost'"),
        ('node_exporter_build_info{version="1.5.0"} 1\n'
         'node_infiniband_info{device="mlx5_0",board_id="x"} 1\n', "?node=gpu000", "body",
         "nor node_infiniband_* ports"),
    ],
)  # fmt: skip
def test_bad_series_are_refused_naming_them(api, nodes, text, query, field, words):
    response = post(api("ada"), text, query)
    assert response.status_code == 400, response.content
    assert words in response.json()[field][0]
    assert not Port.objects.exists()


def test_a_state_the_kernel_adds_is_stored_not_refused(api, nodes):
    """node_exporter's `state_id` 5 (sysfs `5: ACTIVE_DEFER`) was a 400 refusing the whole
    text: it is stored as ACTIVE_DEFER, a number no table names as `UNKNOWN_N`, and the
    text's other ports and GPU samples with them."""
    text = DCGM_SAMPLE.read_text() + (
        'node_infiniband_state_id{device="mlx5_0",port="1"} 5\n'
        'node_infiniband_state_id{device="mlx5_1",port="1"} 4\n'
        'node_infiniband_state_id{device="mlx5_2",port="1"} 9\n'
        'node_infiniband_physical_state_id{device="mlx5_2",port="1"} 0\n'
    )
    response = post(api("ada"), text)
    assert response.status_code == 202, response.content
    assert (response.json()["accepted"], response.json()["ports"]) == (8, 3)
    states = dict(Port.objects.values_list("device", "state"))
    assert states == {"mlx5_0": "ACTIVE_DEFER", "mlx5_1": "ACTIVE", "mlx5_2": "UNKNOWN_9"}
    assert Port.objects.get(device="mlx5_2").phys_state == "UNKNOWN_0"


def test_the_real_node_exporter_passes_active_defer_through(api, nodes, exporter):
    """The kernel's `5: ACTIVE_DEFER` as node_exporter reads it (`state_id` 5) is stored as
    such, beside the other ports of the same scrape."""
    node_exporter, sysfs = exporter
    write_port(sysfs, "mlx5_0", 1, state="5: ACTIVE_DEFER", phys_state="5: LinkUp")
    text = node_exporter.scrape()
    assert 'node_infiniband_state_id{device="mlx5_0",port="1"} 5' in text
    response = post(api("ada"), text)
    assert response.status_code == 202 and response.json()["ports"] == 2, response.content
    assert dict(Port.objects.values_list("device", "state")) == {
        "mlx5_0": "ACTIVE_DEFER",
        "mlx5_1": "DOWN",
    }


def test_at_most_64_ports_in_one_text(api, nodes):
    many = "".join(f'node_infiniband_state_id{{device="mlx5_{i}",port="1"}} 4\n' for i in range(65))
    response = post(api("ada"), many)
    assert response.status_code == 400 and response.json()["line"] == ["65"]
    assert "64 ports per node" in response.json()["body"][0]
    assert post(api("ada"), "".join(many.splitlines(True)[:64])).json()["ports"] == 64


def test_one_scrape_of_a_node_exporter_stores_the_scraped_nodes_ports(nodes, exporter):
    node_exporter, sysfs = exporter
    node = nodes[2]
    Node.objects.filter(pk=node.pk).update(exporter_url=node_exporter.url)
    node_exporter.scrape()  # answering
    result = scrape_nodes(node_ids=[node.pk])
    # No GPU sample in node_exporter's text: its ports alone make the target up.
    assert result == {"targets": 1, "up": 1, "samples": 0, "ports": 2, "host": 0}
    node.refresh_from_db()
    assert (node.scrape_ok, node.scrape_error) == (True, "")
    port = Port.objects.get(node=node, device="mlx5_0", port=1)  # filed under the scraped node
    assert (port.state, port.phys_state, port.rate_gbps) == ("ACTIVE", "LinkUp", 400)
    assert port.counters == COUNTERS
    assert Port.objects.get(node=node, device="mlx5_1").state == "DOWN"
    assert not Port.objects.exclude(node=node).exists()
    # The next scrape: symbol errors grow and the port goes down.
    write_port(sysfs, "mlx5_0", 1, state="1: DOWN", phys_state="2: Polling", symbol_error=40)
    assert scrape_nodes(node_ids=[node.pk])["ports"] == 2
    port.refresh_from_db()
    assert (port.state, port.phys_state, port.prev_counters) == ("DOWN", "Polling", COUNTERS)
    growth = {g.name: g.growth for g in counter_growth(port.prev_counters, port.counters)}
    assert growth == {"symbol_error": 37}
