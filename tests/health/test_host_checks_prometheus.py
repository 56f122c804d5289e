"""The host checks end to end on a cluster whose telemetry source is its site's Prometheus
(docs/checks.md, Host checks: what they share; docs/integrations.md, 2d. Prometheus as the
telemetry source): the real Debian `prometheus-node-exporter` reads a fake kernel (EDAC's
mc0 counts, `/proc/1/mounts`, the directories statfs reads), the real Prometheus scrapes it
every second, and each check's run, executed as the worker executes it, first pulls its
host kind (`pulls`) in one query and then judges the fresh reading: an uncorrectable memory
error the kernel counted after the first run fails `host_memory`, and the required mounts
get `storage`'s verdict. `pcie` asks nothing: node_exporter publishes no PCIe series.
`clock` is judged from the same Prometheus, its timex series served beside node_exporter
(`test_clock_judges_the_timex_series_the_sites_prometheus_scraped` says why)."""

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
from tests.support import TextExporter
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


# node_exporter's timex collector's series (its names, help and types), as a stand-in serves
# them: offset and maximum error in seconds, the kernel's sync status 1 or 0.
TIMEX = """\
# HELP node_timex_maxerror_seconds Maximum error in seconds.
# TYPE node_timex_maxerror_seconds gauge
node_timex_maxerror_seconds {maxerror}
# HELP node_timex_offset_seconds Time offset in between local system and reference clock.
# TYPE node_timex_offset_seconds gauge
node_timex_offset_seconds {offset}
# HELP node_timex_sync_status Is clock synchronized to a reliable server (1 = yes, 0 = no).
# TYPE node_timex_sync_status gauge
node_timex_sync_status {synced}
"""


def timex(offset: float, synced: int) -> str:
    return TIMEX.format(offset=offset, synced=synced, maxerror=0.016 if synced else 16)


@pytest.fixture
def clock_site(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """gpu000's node_exporter on fake trees (its edac and filesystem collectors, not timex)
    and a stand-in serving the timex series, both relabelled to the host's instance (the
    stand-in told apart by a label of its own, so the two targets' `up` series differ), the
    real Prometheus scraping them every second, a counting proxy in front."""
    binary = debian_binary("prometheus", package="prometheus")
    exporter = host_exporter(tmp_path / "node", collectors=("edac", "filesystem"))
    clock = TextExporter(timex(0.000123, 1))
    server = proxy = None
    try:
        exporter.scrape()
        labels = {
            exporter.address: {"instance": "gpu000:9100"},
            clock.address: {"instance": "gpu000:9100", "collector": "timex"},
        }
        targets = [exporter.address, clock.address]
        server = PrometheusServer("prometheus", binary, tmp_path / "prom", targets, labels)
        proxy = CountingProxy(server.url)
        yield {"server": server, "proxy": proxy, "clock": clock}
    finally:
        if proxy is not None:
            proxy.close()
        if server is not None:
            server.stop()
        clock.close()
        exporter.stop()


def test_clock_judges_the_timex_series_the_sites_prometheus_scraped(
    cluster: Cluster, nodes: list[Node], clock_site: dict[str, Any]
) -> None:
    """node_exporter's timex collector reads the kernel itself — adjtimex(2), no file under
    --path.sysfs or --path.procfs (its --help offers no path for it) — so on a test machine
    its offset and sync status are this machine's, and making them vary would take setting
    the machine's clock. A stand-in serves the same series (names, help, types) beside the
    real node_exporter, whose timex collector is off so the two never merge, and the real
    Prometheus scrapes both: the check's own pull, one PromQL query, reads them as it would
    a site's."""
    server, proxy, clock = clock_site["server"], clock_site["proxy"], clock_site["clock"]
    Cluster.objects.filter(pk=cluster.pk).update(prometheus_url=proxy.url)
    cluster.refresh_from_db()

    def scraped(offset: float, synced: int) -> None:
        clock.text = timex(offset, synced)

        def there() -> bool:
            values = {
                r["metric"]["__name__"]: float(r["value"][1])
                for r in server.value('{__name__=~"node_timex_(offset_seconds|sync_status)"}')
            }
            return values == {"node_timex_offset_seconds": offset, "node_timex_sync_status": synced}

        until(there, f"offset {offset} s, synced {synced} scraped", [server.log])

    # In sync, a tenth of a millisecond off: passes, from one query of the timex series.
    scraped(0.000123, 1)
    assert not HostReading.objects.exists()  # nothing is read but by a check's pull
    counts = check_run(cluster, "clock")
    assert (counts["pass"], counts["warn"]) == (2, 0)  # the clock, and "the source answered"
    assert len(proxy.requests) == 1
    assert results("clock") == {"clock:gpu000": ("pass", "offset within ±0.5 s, synchronised")}
    reading = HostReading.objects.get(kind="clock")
    assert (reading.subject, reading.source) == ("system", "prometheus")
    assert reading.values == {"offset_s": 0.000123, "synced": 1}

    # Stepped 0.8 s ahead, still in sync: warns naming the offset (beyond ±0.5 s).
    scraped(0.8, 1)
    assert check_run(cluster, "clock")["warn"] == 1
    status, message = results("clock")["clock:gpu000"]
    assert status == "warn"
    assert message.startswith("clock offset +0.8 s, beyond ±0.5 s: ")
    incident = Incident.objects.get()
    assert (incident.category, incident.severity) == ("other", "sev3")
    assert [n.hostname for n in incident.nodes.all()] == ["gpu000"]

    # Back within a millisecond, but the sync is lost: one run not synchronised passes,
    # the second in a row warns.
    scraped(-0.0004, 0)
    assert check_run(cluster, "clock")["warn"] == 0
    assert results("clock")["clock:gpu000"] == (
        "pass",
        "offset within ±0.5 s, not synchronised",
    )
    assert check_run(cluster, "clock")["warn"] == 1
    status, message = results("clock")["clock:gpu000"]
    assert status == "warn"
    assert message.startswith("clock not synchronised in 2 runs in a row: ")
    assert Node.objects.get(hostname="gpu000").state == "healthy"  # a clock drains nothing
