"""The `fabric` check end to end on the real Debian `prometheus-node-exporter`
(docs/checks.md, `fabric` — NIC ports): each node's exporter reads a fake sysfs tree laid
out as the kernel lays out `/sys/class/infiniband`, KUAE reads it — by scraping the
exporter, or through the site's real Prometheus scraping it — and the check's runs,
executed as the worker executes them, judge what changed: a downed link drains its node
with one `nic` incident, a flapping link warns, a counter reset is silent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from apps.fleet.models import Cluster, Node
from apps.health.models import CheckResult, CheckRun
from apps.health.services import run_execute
from apps.incidents.models import Incident
from apps.telemetry.services import scrape_nodes
from tests.binaries import NodeExporter, PrometheusServer, debian_binary, until, write_port

pytestmark = pytest.mark.django_db

UP = {"state": "4: ACTIVE", "phys_state": "5: LinkUp", "rate": "400 Gb/sec (4X NDR)"}


@pytest.fixture
def exporters(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """gpu000's exporter (mlx5_0 will go down, mlx5_1 will be reset) and gpu001's (mlx5_0
    will flap), all ports ACTIVE with some history."""
    trees = {"gpu000": tmp_path / "sys0", "gpu001": tmp_path / "sys1"}
    write_port(trees["gpu000"], "mlx5_0", 1, **UP, link_downed=0, symbol_error=3)
    write_port(trees["gpu000"], "mlx5_1", 1, **UP, link_downed=2, symbol_error=500)
    write_port(trees["gpu001"], "mlx5_0", 1, **UP, link_downed=0, link_error_recovery=1)
    running = {h: NodeExporter(tree, tmp_path / f"{h}.log") for h, tree in trees.items()}
    try:
        for exporter in running.values():
            exporter.scrape()  # answering
        yield {"trees": trees, "exporters": running}
    finally:
        for exporter in running.values():
            exporter.stop()


def fabric_run(cluster: Cluster) -> dict[str, int]:
    run = CheckRun.objects.create(cluster=cluster, kind="fabric", requested_by="test")
    done = run_execute(run_id=run.pk, now=timezone.now())
    assert done is not None and done.status == "done", done and done.error
    return done.counts


def faults(trees: dict[str, Path]) -> None:
    """The link goes down, counters are reset, a link flaps."""
    write_port(trees["gpu000"], "mlx5_0", 1, state="1: DOWN", phys_state="2: Polling",
               link_downed=1)  # fmt: skip
    write_port(trees["gpu000"], "mlx5_1", 1, link_downed=0, symbol_error=0)
    write_port(trees["gpu001"], "mlx5_0", 1, link_error_recovery=40)


def judged(cluster: Cluster) -> None:
    """What the run after the faults must have made of them."""
    status = dict(
        CheckResult.objects.filter(kind="fabric", target__startswith="port:").values_list(
            "target", "status"
        )
    )
    assert status == {
        "port:gpu000/mlx5_0/1": "fail",
        "port:gpu000/mlx5_1/1": "pass",  # a reset, silent
        "port:gpu001/mlx5_0/1": "warn",
    }
    down = CheckResult.objects.get(target="port:gpu000/mlx5_0/1").message
    assert down == "port mlx5_0/1: was ACTIVE, now DOWN, link_downed +1"
    incidents = {(i.category, i.severity, tuple(n.hostname for n in i.nodes.all())) for i in
                 Incident.objects.all()}  # fmt: skip
    assert incidents == {("nic", "sev2", ("gpu000",)), ("nic", "sev3", ("gpu001",))}
    states = dict(Node.objects.filter(cluster=cluster).values_list("hostname", "state"))
    assert (states["gpu000"], states["gpu001"]) == ("drained", "suspect")


def test_the_check_judges_what_the_scraper_reads_from_node_exporter(
    cluster: Cluster, nodes: list[Node], exporters: dict[str, Any]
) -> None:
    for host, exporter in exporters["exporters"].items():
        Node.objects.filter(hostname=host).update(exporter_url=exporter.url)
    ids = list(Node.objects.filter(hostname__in=["gpu000", "gpu001"]).values_list("pk", flat=True))
    assert scrape_nodes(node_ids=ids)["ports"] == 3
    assert fabric_run(cluster)["pass"] == 3  # the first run has nothing to compare with
    faults(exporters["trees"])
    assert scrape_nodes(node_ids=ids)["ports"] == 3
    fabric_run(cluster)
    judged(cluster)


def test_the_check_judges_what_the_sites_prometheus_scrapes(
    cluster: Cluster, nodes: list[Node], exporters: dict[str, Any], tmp_path: Path
) -> None:
    binary = debian_binary("prometheus", package="prometheus")
    running = exporters["exporters"]
    addresses = [running[h].address for h in ("gpu000", "gpu001")]
    # The site relabels each target's instance to its host, as node_exporter has no host label.
    labels = {running[h].address: {"instance": f"{h}:9100"} for h in running}
    server = PrometheusServer("prometheus", binary, tmp_path / "prometheus", addresses, labels)
    try:
        Cluster.objects.filter(pk=cluster.pk).update(prometheus_url=server.url)
        cluster.refresh_from_db()

        def scraped(query: str, value: float) -> bool:
            return [float(r["value"][1]) for r in server.value(query)] == [value]

        until(
            lambda: len(server.value("node_infiniband_state_id")) == 3, "first scrape", [server.log]
        )
        assert fabric_run(cluster)["pass"] == 4  # its 3 ports, and "the source answered"
        faults(exporters["trees"])
        until(
            lambda: (
                scraped('node_infiniband_link_error_recovery_total{instance="gpu001:9100"}', 40)
                and scraped('node_infiniband_state_id{instance="gpu000:9100",device="mlx5_0"}', 1)
                and scraped('node_infiniband_symbol_error_total{device="mlx5_1"}', 0)
            ),
            "the faults scraped",
            [server.log],
        )
        fabric_run(cluster)
        judged(cluster)
    finally:
        server.stop()
