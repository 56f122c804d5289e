"""NIC ports from a cluster's Prometheus (docs/integrations.md, 2d. Prometheus as the
telemetry source): the real Debian `prometheus` (and VictoriaMetrics where installed)
scrapes two real `prometheus-node-exporter`s, each on a fake sysfs tree; a pull of the
`fabric` check's names asks one query whatever the nodes, files each port under the node
its `instance` names (by address, or by hostname without the port), and stores the
state, rate and counters as the intake does; then a counter grows and a port goes down.
The pure parts: the query, the instance's host, the reading of an answer."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from apps.fleet.models import Cluster, Node
from apps.health.checks import fabric
from apps.health.services import PULLED_METRICS
from apps.telemetry.infiniband import (
    PORT_METRICS,
    infiniband_query,
    instance_host,
    instance_index,
    readings_of_vector,
)
from apps.telemetry.models import Port
from apps.telemetry.ports import counter_growth
from apps.telemetry.prometheus_source import prometheus_pull
from tests.binaries import (
    CountingProxy,
    NodeExporter,
    PrometheusServer,
    debian_binary,
    until,
    write_port,
)

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
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
RENAMED = "gpu001.dc1.example:9100"  # the second exporter's instance, as a site relabels it


@pytest.fixture(params=["prometheus", "victoria-metrics"])
def fabric_stack(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """Two node_exporters (one by its address, one relabelled to a hostname), a server
    scraping both, and a counting proxy in front of the server."""
    kind = request.param
    names = (
        ("prometheus",) if kind == "prometheus" else ("victoria-metrics", "victoria-metrics-prod")
    )
    binary = debian_binary(*names, package=kind)
    first, second = tmp_path / "sys0", tmp_path / "sys1"
    write_port(first, "mlx5_0", 1, state="4: ACTIVE", phys_state="5: LinkUp",
               rate="400 Gb/sec (4X NDR)", **COUNTERS, port_rcv_data=100)  # fmt: skip
    write_port(first, "mlx5_1", 1, state="1: DOWN", phys_state="3: Disabled",
               rate="10 Gb/sec (4X SDR)", link_downed=0)  # fmt: skip
    write_port(second, "mlx5_0", 1, state="4: ACTIVE", phys_state="5: LinkUp",
               rate="200 Gb/sec (4X HDR)", symbol_error=0)  # fmt: skip
    exporters = [
        NodeExporter(first, tmp_path / "ne0.log"),
        NodeExporter(second, tmp_path / "ne1.log"),
    ]
    server = proxy = None
    try:
        for exporter in exporters:
            exporter.scrape()  # answering before the server's first scrape
        addresses = [e.address for e in exporters]
        labels = {addresses[1]: {"instance": RENAMED}}
        server = PrometheusServer(kind, binary, tmp_path / kind, addresses, labels)
        proxy = CountingProxy(server.url)
        yield {"server": server, "proxy": proxy, "sysfs": first, "address": addresses[0]}
    finally:
        if proxy is not None:
            proxy.close()
        if server is not None:
            server.stop()
        for exporter in exporters:
            exporter.stop()


def _states(server: PrometheusServer) -> dict[tuple[str, str], float]:
    rows = server.value("node_infiniband_state_id")
    return {(r["metric"]["instance"], r["metric"]["device"]): float(r["value"][1]) for r in rows}


@pytest.mark.django_db
def test_a_fabric_pull_reads_node_exporters_ports_in_one_query(
    fabric_stack: dict[str, Any], cluster: Cluster, nodes: list[Node]
) -> None:
    server, proxy = fabric_stack["server"], fabric_stack["proxy"]
    # gpu000 is found by its address (the instance 127.0.0.1:port); gpu001 by the short
    # name of the instance gpu001.dc1.example:9100.
    Node.objects.filter(hostname="gpu000").update(addresses=["127.0.0.1"])
    Cluster.objects.filter(pk=cluster.pk).update(prometheus_url=proxy.url)
    cluster.refresh_from_db()
    until(lambda: len(_states(server)) == 3, "both exporters scraped", [server.log])

    t0 = timezone.now()
    gpus, ports, _ = prometheus_pull(cluster, now=t0, metrics=fabric.SPEC.pulls)
    assert (gpus.accepted, ports.applied) == (0, 3)
    assert len(proxy.requests) == 1  # one query for every node, and no dcgm query
    port = Port.objects.get(node__hostname="gpu000", device="mlx5_0", port=1)
    assert (port.state, port.phys_state, port.rate_gbps, port.ts) == ("ACTIVE", "LinkUp", 400, t0)
    assert port.counters == COUNTERS  # by KUAE's names; data counts not kept
    down = Port.objects.get(node__hostname="gpu000", device="mlx5_1", port=1)
    assert (down.state, down.phys_state, down.rate_gbps) == ("DOWN", "Disabled", 10)
    assert down.counters == {"link_downed": 0}
    renamed = Port.objects.get(node__hostname="gpu001")
    assert (renamed.state, renamed.rate_gbps, renamed.counters) == (
        "ACTIVE",
        200,
        {"symbol_error": 0},
    )
    assert Port.objects.count() == 3  # no other node reports

    # Symbol errors grow and the port goes down: the next pull sees both.
    write_port(fabric_stack["sysfs"], "mlx5_0", 1, state="1: DOWN", phys_state="2: Polling",
               symbol_error=40, link_downed=2)  # fmt: skip
    first = (fabric_stack["address"], "mlx5_0")
    until(lambda: _states(server).get(first) == 1.0, "the port down scraped", [server.log])
    t1 = timezone.now()
    assert prometheus_pull(cluster, now=t1, metrics=fabric.SPEC.pulls)[1].applied == 3
    assert len(proxy.requests) == 2
    port.refresh_from_db()
    assert (port.state, port.phys_state, port.rate_gbps) == ("DOWN", "Polling", 400)
    assert (port.prev_counters, port.prev_ts, port.ts) == (COUNTERS, t0, t1)
    growth = {g.name: g.growth for g in counter_growth(port.prev_counters, port.counters)}
    assert growth == {"link_downed": 1, "symbol_error": 37}


def test_the_query_asks_the_mapped_series_and_the_gpu_checks_ask_none() -> None:
    query = infiniband_query(fabric.SPEC.pulls)
    assert query is not None and query.startswith("max by (__name__, instance, device, port) (")
    for series in ("state_id", "physical_state_id", "rate_bytes_per_second",
                   "port_errors_received_total", "port_transmit_wait_total"):  # fmt: skip
        assert f"node_infiniband_{series}" in query
    assert infiniband_query(None) == infiniband_query(PORT_METRICS) == query
    # hw_counters' names alone: node_exporter 1.5 publishes neither, so nothing is asked.
    assert infiniband_query({"rnr_nak_retry_err", "local_ack_timeout_err"}) is None
    for kind, metrics in PULLED_METRICS.items():
        if kind != "fabric":
            assert infiniband_query(metrics) is None, kind  # a GPU check's pull: one query still


@pytest.mark.parametrize(
    ("instance", "host"),
    [
        ("gpu-a017:9100", "gpu-a017"),
        ("GPU-A017.dc1.example.:9100", "gpu-a017.dc1.example"),
        ("10.0.3.17:9100", "10.0.3.17"),
        ("[fd00:0::7]:9100", "fd00::7"),
        ("fd00::7", "fd00::7"),
        ("gpu-a017", "gpu-a017"),
    ],
)
def test_instance_host_drops_the_port(instance: str, host: str) -> None:
    assert instance_host(instance) == host


def test_readings_of_an_answer_pick_the_clusters_nodes_and_skip_bad_series() -> None:
    hosts = instance_index(
        ["gpu-a017.dc1.example", "gpu-b001", "twin.a", "twin.b"], [("gpu-b001", "10.0.3.17")]
    )

    def series(name: str, instance: object, value: int, device: object = "mlx5_0") -> tuple:
        labels = {"__name__": f"node_infiniband_{name}", "instance": instance, "device": device}
        return {**labels, "port": "1"}, float(value)  # as vector_of reads an answer

    vector = [
        series("state_id", "gpu-a017:9100", 4),  # by short name
        series("symbol_error_total", "gpu-a017:9100", 5),
        series("state_id", "10.0.3.17:9100", 1),  # by address
        series("state_id", "10.0.3.17:9100", -1, device="mlx5_1"),  # a bad state: left out
        series("link_downed_total", "10.0.3.17:9100", 2, device="mlx5_1"),
        series("state_id", "10.0.3.17:9100", 5, device="mlx5_2"),  # the kernel's ACTIVE_DEFER
        series("state_id", "twin:9100", 4),  # a short name two nodes share: neither
        series("state_id", "elsewhere:9100", 4),  # another cluster's node
        series("state_id", ["odd"], 4),
        series("state_id", "gpu-b001:9100", 4, device=7),
        series("info", "gpu-b001:9100", 1),
    ]
    readings = readings_of_vector(vector, hosts=hosts, ts=NOW)
    got = {(r.node, r.device): (r.state, r.counters) for r in readings}
    assert got == {
        ("gpu-a017.dc1.example", "mlx5_0"): ("ACTIVE", {"symbol_error": 5}),
        ("gpu-b001", "mlx5_0"): ("DOWN", {}),
        ("gpu-b001", "mlx5_1"): ("", {"link_downed": 2}),
        ("gpu-b001", "mlx5_2"): ("ACTIVE_DEFER", {}),
    }
    assert all(r.ts == NOW for r in readings)
