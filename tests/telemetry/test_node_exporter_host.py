"""Host readings from node_exporter (docs/integrations.md, Host readings from node_exporter
and a site's Prometheus): the real Debian `prometheus-node-exporter` runs its `edac`,
`filesystem` and `timex` collectors on fake sysfs, procfs and root trees; its `/metrics`
text is posted with `?node=` (or scraped as a node's `exporter_url`, or scraped by a real
Prometheus that a pull asks), and the stored readings carry a memory controller's EDAC
totals, each real mount's size, free space and state, and the clock, by KUAE's names.
Pseudo filesystems are not stored; a bad series refuses the whole text, ports and GPU
samples with it; a kind declared with its series is read with no other code."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from django.utils import timezone

from apps.fleet.models import GPU, Cluster, Node
from apps.health.checks import fabric
from apps.telemetry.host_kinds import HOST_KINDS, HostKind, Value, clock_name
from apps.telemetry.host_series import host_query, host_readings_of_vector, pull_name
from apps.telemetry.infiniband import instance_index
from apps.telemetry.models import HostReading, Port
from apps.telemetry.prometheus_source import prometheus_pull
from apps.telemetry.services import scrape_nodes
from tests.binaries import (
    CountingProxy,
    NodeExporter,
    PrometheusServer,
    debian_binary,
    until,
)
from tests.support import DCGM_SAMPLE

pytestmark = pytest.mark.django_db

URL = "/api/v1/ingest/prometheus/"
T0 = timezone.now().replace(microsecond=0) - dt.timedelta(minutes=10)
MOUNTS = (
    "/dev/nvme0n1p1 /checkpoints ext4 rw,relatime 0 0\n"
    "tmpfs /local-tmp tmpfs rw,nosuid,nodev 0 0\n"  # a pseudo filesystem: not stored
    "nas01:/export/scratch /scratch nfs4 ro,relatime 0 0\n"  # read-only
    "nas01:/export/gone /gone nfs4 rw,relatime 0 0\n"  # no directory: statfs fails
)


def iso(t: dt.datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def write_edac(sysfs: Path, controller: int, *, ce: int, ue: int) -> None:
    """`devices/system/edac/mc/mcN/`: the four counts node_exporter 1.5's edac collector
    reads (it fails the controller without the `noinfo` ones)."""
    where = sysfs / "devices" / "system" / "edac" / "mc" / f"mc{controller}"
    where.mkdir(parents=True, exist_ok=True)
    counts = {"ce_count": ce, "ue_count": ue, "ce_noinfo_count": 0, "ue_noinfo_count": 0}
    for name, value in counts.items():
        (where / name).write_text(f"{value}\n")


def host_exporter(
    base: Path, collectors: tuple[str, ...] = ("edac", "filesystem", "timex")
) -> NodeExporter:
    """node_exporter's edac, filesystem and timex collectors (or those of `collectors`) on
    trees under `base`: one memory controller (5 correctable, 0 uncorrectable), the mounts
    of MOUNTS as `/proc/1/mounts` says them, the directories statfs reads under the root
    tree."""
    sysfs, procfs, rootfs = base / "sys", base / "proc", base / "root"
    write_edac(sysfs, 0, ce=5, ue=0)
    (procfs / "1").mkdir(parents=True)
    (procfs / "1" / "mounts").write_text(MOUNTS)
    for mount in ("checkpoints", "local-tmp", "scratch"):
        (rootfs / mount).mkdir(parents=True)
    return NodeExporter(
        sysfs,
        base / "node_exporter.log",
        collectors=collectors,
        procfs=procfs,
        rootfs=rootfs,
    )


@pytest.fixture
def exporter(tmp_path: Path) -> Iterator[tuple[NodeExporter, Path]]:
    running = host_exporter(tmp_path)
    yield running, tmp_path
    running.stop()


@pytest.fixture
def browser(client, users):  # noqa: ANN001, ANN201
    client.force_login(users["mia"])
    return client


def post(client, text: str, query: str = "?node=gpu000"):  # noqa: ANN001, ANN201
    return client.post(URL + query, text, content_type="text/plain")


def stored(node: str = "gpu000") -> dict[tuple[str, str], HostReading]:
    return {(r.kind, r.subject): r for r in HostReading.objects.filter(node__hostname=node)}


def assert_the_trees_readings(readings: dict[tuple[str, str], HostReading], root: Path) -> None:
    """The readings of `host_exporter`'s trees, whichever way they came."""
    assert set(readings) == {
        ("memory", "mc0"),
        ("filesystem", "/checkpoints"),
        ("filesystem", "/scratch"),
        ("filesystem", "/gone"),
        ("clock", "system"),
    }  # the tmpfs is not stored; node_exporter has no PCIe series
    assert readings[("memory", "mc0")].values == {"ce_total": 5, "ue_total": 0}
    checkpoints = readings[("filesystem", "/checkpoints")].values
    disk = os.statvfs(root / "checkpoints")
    assert checkpoints == {
        "device": "/dev/nvme0n1p1",
        "fstype": "ext4",
        "readonly": 0,
        "device_error": 0,
        "size_bytes": disk.f_blocks * disk.f_frsize,
        "avail_bytes": checkpoints["avail_bytes"],  # free space moves under a running test
    }
    assert isinstance(checkpoints["avail_bytes"], int)
    assert 0 < checkpoints["avail_bytes"] <= checkpoints["size_bytes"]
    scratch = readings[("filesystem", "/scratch")].values
    assert (scratch["device"], scratch["fstype"], scratch["readonly"]) == (
        "nas01:/export/scratch",
        "nfs4",
        1,
    )
    # A mount statfs cannot read: its device error alone (node_exporter sends no size).
    assert readings[("filesystem", "/gone")].values == {
        "device": "nas01:/export/gone",
        "fstype": "nfs4",
        "device_error": 1,
    }
    # The real kernel's adjtimex: present and of their types only.
    clock = readings[("clock", "system")].values
    assert set(clock) == {"offset_s", "synced"}
    assert isinstance(clock["offset_s"], int | float) and clock["synced"] in (0, 1)


def test_the_real_node_exporters_host_series_are_stored(api, browser, nodes, exporter):
    node_exporter, base = exporter
    client = api("ada")
    text = node_exporter.scrape()
    assert 'node_edac_correctable_errors_total{controller="0"} 5' in text
    first = post(client, text, f"?node=gpu000&ts={iso(T0)}")
    assert first.status_code == 202, first.content
    assert first.json() == {
        "accepted": 0, "applied": 0, "stale": 0, "events": 0, "ports": 0, "ports_stale": 0,
        "host": 5, "host_stale": 0, "host_skipped": 1,
    }  # fmt: skip
    readings = stored()
    assert_the_trees_readings(readings, base / "root")
    assert {r.source for r in readings.values()} == {"node_exporter"}
    assert {r.ts for r in readings.values()} == {T0}
    assert not HostReading.objects.exclude(node__hostname="gpu000").exists()
    assert Node.objects.get(hostname="gpu000").last_seen_at is not None

    # The same scrape again changes nothing; then an uncorrectable error and two
    # correctable ones, a minute later.
    again = post(client, text, f"?node=gpu000&ts={iso(T0)}").json()
    assert (again["host"], again["host_stale"]) == (0, 5)
    write_edac(base / "sys", 0, ce=7, ue=1)
    later = post(
        client, node_exporter.scrape(), f"?node=gpu000&ts={iso(T0 + dt.timedelta(minutes=1))}"
    )
    assert later.status_code == 202 and later.json()["host"] == 5, later.content
    mc0 = HostReading.objects.get(node__hostname="gpu000", kind="memory", subject="mc0")
    assert (mc0.values, mc0.prev_values) == (
        {"ce_total": 7, "ue_total": 1},
        {"ce_total": 5, "ue_total": 0},
    )
    assert (mc0.ts, mc0.prev_ts) == (T0 + dt.timedelta(minutes=1), T0)

    # The node's host readings say what node_exporter cannot report: PCIe (and vmstat,
    # whose collector this exporter does not run).
    answer = api("mia").get("/api/v1/nodes/gpu000/host/").json()
    assert answer["not_reported"] == ["pcie", "vmstat"]
    html = browser.get("/nodes/gpu000/").content.decode()
    assert "node_exporter publishes no such series; the node agent reads them" in html


def test_host_series_with_ports_and_gpu_samples_all_or_nothing(api, nodes):
    client = api("ada")
    ib = 'node_infiniband_state_id{device="mlx5_0",port="1"} 4\n'
    edac = 'node_edac_uncorrectable_errors_total{controller="1"} 2\n'
    both = post(client, DCGM_SAMPLE.read_text() + ib + edac)
    assert both.status_code == 202, both.content
    assert (both.json()["accepted"], both.json()["ports"], both.json()["host"]) == (8, 1, 1)
    assert stored()[("memory", "mc1")].values == {"ue_total": 2}
    # A bad host value refuses the GPU samples and the ports of the same text too.
    bad = DCGM_SAMPLE.read_text() + ib + "node_timex_sync_status 2\n"
    refused = post(client, bad, "?node=gpu001")
    assert refused.status_code == 400
    said = refused.json()["body"][0]
    assert said.endswith(": node_timex_sync_status (synced) of system: must be 0 or 1"), said
    assert not GPU.objects.filter(node__hostname="gpu001").exclude(metrics={}).exists()
    assert not Port.objects.filter(node__hostname="gpu001").exists()
    assert not HostReading.objects.filter(node__hostname="gpu001").exists()


@pytest.mark.parametrize(
    ("text", "query", "field", "words"),
    [
        ('node_timex_offset_seconds 0.001\n', "", "node", "?node="),
        ('node_edac_correctable_errors_total{controller="0"} 1.5\n', "?node=gpu000", "body",
         "node_edac_correctable_errors_total (ce_total) of mc0: must be an integer"),
        ('node_edac_correctable_errors_total{controller="x"} 1\n', "?node=gpu000", "body",
         "node_edac_correctable_errors_total: label controller must be a memory controller"),
        ('node_filesystem_size_bytes{device="d",fstype="ext4",mountpoint="data"} 1\n',
         "?node=gpu000", "body", "label mountpoint must be a mount point"),
        ('node_filesystem_size_bytes{device="d",fstype="ext 4",mountpoint="/d"} 1\n',
         "?node=gpu000", "body", "label fstype must match"),
        ('node_filesystem_avail_bytes{device="d",fstype="ext4",mountpoint="/d"} -1\n',
         "?node=gpu000", "body", "(avail_bytes) of /d: must be ≥ 0"),
        ('node_timex_offset_seconds NaN\n', "?node=gpu000", "body",
         "(offset_s) of system: must be a finite number"),
        ('node_timex_offset_seconds 0.001\n', "?node=ghost", "host[0].node",
         "unknown node 'ghost'"),
    ],
)  # fmt: skip
def test_bad_host_series_are_refused_naming_them(api, nodes, text, query, field, words):
    response = post(api("ada"), text, query)
    assert response.status_code == 400, response.content
    assert words in str(response.json()[field])
    assert not HostReading.objects.exists()


def test_pseudo_filesystems_alone_store_nothing_and_say_so(api, nodes):
    text = 'node_filesystem_size_bytes{device="tmpfs",fstype="tmpfs",mountpoint="/run/x"} 1e6\n'
    answer = post(api("ada"), text)
    assert answer.status_code == 202, answer.content
    assert (answer.json()["host"], answer.json()["host_skipped"]) == (0, 1)
    assert not HostReading.objects.exists()


def test_one_scrape_of_a_node_exporter_stores_the_scraped_nodes_host(nodes, exporter):
    node_exporter, base = exporter
    node = nodes[2]
    Node.objects.filter(pk=node.pk).update(exporter_url=node_exporter.url)
    node_exporter.scrape()  # answering
    result = scrape_nodes(node_ids=[node.pk])
    # Neither GPU samples nor ports: its host readings alone make the target up.
    assert result == {"targets": 1, "up": 1, "samples": 0, "ports": 0, "host": 5}
    node.refresh_from_db()
    assert (node.scrape_ok, node.scrape_error) == (True, "")
    readings = stored(node.hostname)
    assert_the_trees_readings(readings, base / "root")
    assert {r.source for r in readings.values()} == {"node_exporter"}
    assert HostReading.objects.exclude(node=node).count() == 0


def test_a_kind_declared_with_its_series_is_read_with_no_other_code(api, nodes, monkeypatch):
    """An NVMe kind added to HOST_KINDS alone, with its series and subject label, is read
    from node_exporter's text (a future collector's series, here written by hand)."""
    nvme = HostKind(
        slug="nvme",
        label="NVMe media",
        subject="an NVMe controller",
        example="nvme0",
        read_subject=clock_name,
        values=(
            Value("media_errors", "counter", "media errors", series="node_nvme_media_errors_total"),
            Value("model", "text", "model", series="model"),
        ),
        from_node_exporter=True,
        subject_label="device",
    )
    kinds = MappingProxyType({**HOST_KINDS, "nvme": nvme})
    for module in ("host", "services.host", "host_series"):
        monkeypatch.setattr(f"apps.telemetry.{module}.HOST_KINDS", kinds)
    text = 'node_nvme_media_errors_total{device="nvme1",model="PM1733"} 3\n'
    answer = post(api("ada"), text)
    assert answer.status_code == 202 and answer.json()["host"] == 1, answer.content
    reading = HostReading.objects.get(kind="nvme")
    assert (reading.subject, reading.values) == ("nvme1", {"media_errors": 3, "model": "PM1733"})
    query = host_query(["nvme"])
    assert query == (
        'max by (__name__, instance, device, model) ({__name__=~"node_nvme_media_errors_total"})'
    )


# --- from a cluster's Prometheus (docs/integrations.md, 2d. Prometheus as the telemetry source)

HOST_PULLS = frozenset(pull_name(kind) for kind in ("memory", "filesystem", "clock"))


@pytest.fixture
def host_stack(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A host node_exporter, the real Prometheus scraping it, a counting proxy in front."""
    binary = debian_binary("prometheus", package="prometheus")
    node_exporter = host_exporter(tmp_path / "node")
    server = proxy = None
    try:
        node_exporter.scrape()  # answering before the server's first scrape
        server = PrometheusServer("prometheus", binary, tmp_path / "prom", [node_exporter.address])
        proxy = CountingProxy(server.url)
        yield {"server": server, "proxy": proxy, "base": tmp_path / "node"}
    finally:
        if proxy is not None:
            proxy.close()
        if server is not None:
            server.stop()
        node_exporter.stop()


def test_a_pull_reads_node_exporters_host_series_in_one_query(
    host_stack: dict[str, Any], cluster: Cluster, nodes: list[Node]
) -> None:
    server, proxy = host_stack["server"], host_stack["proxy"]
    Node.objects.filter(hostname="gpu000").update(addresses=["127.0.0.1"])
    Cluster.objects.filter(pk=cluster.pk).update(prometheus_url=proxy.url)
    cluster.refresh_from_db()
    until(lambda: server.value("node_timex_sync_status"), "node_exporter scraped", [server.log])

    t0 = timezone.now()
    gpus, ports, host = prometheus_pull(cluster, now=t0, metrics=HOST_PULLS)
    assert (gpus.accepted, ports.applied, host.applied, host.skipped) == (0, 0, 5, 1)
    assert len(proxy.requests) == 1  # one query for every node: no dcgm, no ports
    readings = stored()
    assert_the_trees_readings(readings, host_stack["base"] / "root")
    assert {r.source for r in readings.values()} == {"prometheus"}
    assert {r.ts for r in readings.values()} == {t0}

    # The fabric's pull asks no host series; one kind's pull asks that kind's alone.
    proxy.requests.clear()
    assert prometheus_pull(cluster, now=timezone.now(), metrics=fabric.SPEC.pulls)[2].applied == 0
    assert len(proxy.requests) == 1
    write_edac(host_stack["base"] / "sys", 0, ce=6, ue=0)
    until(
        lambda: [
            r for r in server.value("node_edac_correctable_errors_total") if r["value"][1] == "6"
        ],
        "the grown count scraped",
        [server.log],
    )
    t1 = timezone.now()
    _, _, memory = prometheus_pull(cluster, now=t1, metrics={pull_name("memory")})
    assert memory.applied == 1
    mc0 = HostReading.objects.get(node__hostname="gpu000", kind="memory")
    assert (mc0.values, mc0.prev_values, mc0.prev_ts) == (
        {"ce_total": 6, "ue_total": 0},
        {"ce_total": 5, "ue_total": 0},
        t0,
    )


def test_readings_of_an_answer_pick_the_clusters_nodes_and_skip_bad_series() -> None:
    hosts = instance_index(["gpu-a017.dc1.example", "gpu-b001"], [("gpu-b001", "10.0.3.17")])
    fs = {"device": "/dev/sda1", "fstype": "ext4", "mountpoint": "/checkpoints"}

    def series(name: str, instance: object, value: float, **labels: object) -> tuple:
        return {"__name__": name, "instance": instance, **labels}, value

    at = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    vector = [
        series("node_edac_correctable_errors_total", "gpu-a017:9100", 4, controller="0"),
        series("node_edac_uncorrectable_errors_total", "gpu-a017:9100", -1, controller="0"),
        series("node_filesystem_size_bytes", "10.0.3.17:9100", 1e12, **fs),
        series("node_filesystem_readonly", "10.0.3.17:9100", 0, **fs),
        series(
            "node_filesystem_size_bytes",
            "10.0.3.17:9100",
            1e6,
            device="tmpfs",
            fstype="tmpfs",
            mountpoint="/run/user",
        ),  # fmt: skip
        series("node_timex_offset_seconds", "elsewhere:9100", 0.5),  # another cluster's node
        series("node_timex_offset_seconds", ["odd"], 0.5),
        series("node_timex_sync_status", "gpu-b001:9100", 1, odd=7),
        series("node_timex_status", "gpu-b001:9100", 64),  # not declared
    ]
    readings = host_readings_of_vector(vector, hosts=hosts, ts=at)
    got = {(r.node, r.kind, r.subject): r.values for r in readings}
    assert got == {
        ("gpu-a017.dc1.example", "memory", "mc0"): {"ce_total": 4},  # the bad ue left out
        ("gpu-b001", "filesystem", "/checkpoints"): {
            "device": "/dev/sda1",
            "fstype": "ext4",
            "size_bytes": 10**12,
            "readonly": 0,
        },
        ("gpu-b001", "filesystem", "/run/user"): {
            "device": "tmpfs",
            "fstype": "tmpfs",
            "size_bytes": 10**6,
        },  # stored or not is the intake's to say (PSEUDO_FILESYSTEMS)
    }
    assert {(r.source, r.ts) for r in readings} == {("prometheus", at)}
