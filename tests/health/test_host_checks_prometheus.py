"""The host checks end to end on a cluster whose telemetry source is its site's Prometheus
(docs/checks.md, Host checks: what they share; docs/integrations.md, 2d. Prometheus as the
telemetry source): the real Debian `prometheus-node-exporter` reads a fake kernel (EDAC's
mc0 counts, `/proc/1/mounts`, the directories statfs reads), the real Prometheus scrapes it
every second, and each check's run, executed as the worker executes it, first pulls its
host kind (`pulls`) in one query and then judges the fresh reading: an uncorrectable memory
error the kernel counted after the first run fails `host_memory`, and the required mounts
get `storage`'s verdict. `pcie` asks nothing: node_exporter publishes no PCIe series."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from apps.fleet.models import Cluster, Node
from apps.health.choices import SOURCE_TARGET
from apps.health.models import CheckResult, CheckRun
from apps.health.services import run_execute
from apps.incidents.models import Incident
from apps.telemetry.models import HostReading
from tests.binaries import CountingProxy, PrometheusServer, debian_binary, until
from tests.telemetry.test_node_exporter_host import host_exporter, write_edac

pytestmark = pytest.mark.django_db


@pytest.fixture
def site(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """gpu000's node_exporter on fake trees (mc0: 5 correctable, 0 uncorrectable;
    /checkpoints on a real directory, /scratch read-only), the real Prometheus scraping it
    with the site's relabelling of its instance to the host, a counting proxy in front."""
    binary = debian_binary("prometheus", package="prometheus")
    exporter = host_exporter(tmp_path / "node")
    server = proxy = None
    try:
        exporter.scrape()  # answering before the server's first scrape
        labels = {exporter.address: {"instance": "gpu000:9100"}}
        server = PrometheusServer(
            "prometheus", binary, tmp_path / "prom", [exporter.address], labels
        )
        proxy = CountingProxy(server.url)
        yield {"server": server, "proxy": proxy, "base": tmp_path / "node"}
    finally:
        if proxy is not None:
            proxy.close()
        if server is not None:
            server.stop()
        exporter.stop()


def check_run(cluster: Cluster, kind: str) -> dict[str, int]:
    run = CheckRun.objects.create(cluster=cluster, kind=kind, requested_by="test")
    done = run_execute(run_id=run.pk, now=timezone.now())
    assert done is not None and done.status == "done", done and done.error
    return done.counts


def results(kind: str) -> dict[str, tuple[str, str]]:
    rows = CheckResult.objects.filter(kind=kind).exclude(target=SOURCE_TARGET)
    return {r.target: (r.status, r.message) for r in rows}


def test_host_checks_judge_what_the_sites_prometheus_scraped_just_before(
    cluster: Cluster, nodes: list[Node], site: dict[str, Any]
) -> None:
    server, proxy, base = site["server"], site["proxy"], site["base"]
    Cluster.objects.filter(pk=cluster.pk).update(
        prometheus_url=proxy.url, required_mounts=["/checkpoints", "/scratch"]
    )
    cluster.refresh_from_db()
    until(lambda: server.value("node_timex_sync_status"), "first scrape", [server.log])
    assert not HostReading.objects.exists()  # nothing is read but by a check's pull

    # host_memory's run pulls its kind alone (one query) and judges the first reading.
    counts = check_run(cluster, "host_memory")
    assert (counts["pass"], counts["fail"]) == (2, 0)  # mc0, and "the source answered"
    assert len(proxy.requests) == 1
    assert set(HostReading.objects.values_list("kind", flat=True)) == {"memory"}
    assert results("host_memory") == {
        "mc:gpu000/mc0": ("pass", "within limits (first reading: growth is measured from the next)")
    }
    source = CheckResult.objects.get(kind="host_memory", target=SOURCE_TARGET)
    assert (source.status, source.message) == ("pass", f"telemetry source {proxy.url} answered")

    # storage's run pulls the filesystems and judges the required mounts.
    proxy.requests.clear()
    check_run(cluster, "storage")
    assert len(proxy.requests) == 1
    disk = os.statvfs(base / "root" / "checkpoints")
    free = 100 * disk.f_bavail / disk.f_blocks
    storage = results("storage")
    assert set(storage) == {"mount:gpu000:/checkpoints", "mount:gpu000:/scratch"}
    status, message = storage["mount:gpu000:/checkpoints"]
    assert (status, message.split(",")[0]) == (
        "pass" if free >= 5 else "warn",
        "/checkpoints writable" if free >= 5 else f"/checkpoints: {message.split(': ')[1]}",
    )
    assert storage["mount:gpu000:/scratch"] == (
        "fail",
        "/scratch is read-only (nas01:/export/scratch)",
    )

    # pcie's run asks the source nothing: node_exporter publishes no PCIe series.
    proxy.requests.clear()
    nothing = dict.fromkeys(("incidents_opened", "incidents_resolved", "nodes_changed"), 0)
    assert check_run(cluster, "pcie") == {"pass": 0, "warn": 0, "fail": 0, **nothing}
    assert proxy.requests == []
    assert not CheckResult.objects.filter(kind="pcie").exists()

    # The kernel counts an uncorrectable error; once Prometheus scraped it, the next run
    # reads it and fails the controller with a sev2 host_memory incident on gpu000.
    write_edac(base / "sys", 0, ce=5, ue=1)
    until(
        lambda: [
            r for r in server.value("node_edac_uncorrectable_errors_total") if r["value"][1] == "1"
        ],
        "the uncorrectable error scraped",
        [server.log],
    )
    assert check_run(cluster, "host_memory")["fail"] == 1
    assert results("host_memory") == {
        "mc:gpu000/mc0": ("fail", "1 uncorrectable memory error (EDAC ue_total +1)")
    }
    # (one node's broken mount is its own incident: a storage component needs 3 nodes)
    incidents = {
        (i.category, i.severity, tuple(n.hostname for n in i.nodes.all()))
        for i in Incident.objects.all()
    }
    assert incidents == {("storage", "sev2", ("gpu000",)), ("host_memory", "sev2", ("gpu000",))}
    assert Node.objects.get(hostname="gpu000").state == "drained"
