"""The GPU checks reading a real Prometheus (Debian's `prometheus`, docs/integrations.md, 2d.
Prometheus): it scrapes a fake dcgm-exporter here (the real-shaped text of
tests/data/dcgm/h100-node.prom, one block per node) every second, and the cluster's `prometheus_url`
points at a counting proxy in front of it. No telemetry is posted to KUAE. A hot GPU (two hot runs)
and a fatal XID are found; a stopped Prometheus gives `error` results, no pass and no state change,
and the overview says so; the requests per run are the same at 2 and at 20 nodes.

The same tests run against VictoriaMetrics's single binary (Debian's `victoria-metrics`)
when it is installed: it answers the same HTTP API."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from apps.fleet.choices import NodeState
from apps.fleet.models import GPU, Cluster, Node, NodeStateChange
from apps.fleet.services import NodeSpec, cluster_create, nodes_register
from apps.health.choices import SOURCE_TARGET, ResultStatus, RunStatus
from apps.health.models import CheckResult, CheckRun
from apps.health.services import run_execute
from apps.incidents.models import Incident
from apps.telemetry.gpu_history import GPU_PANELS
from apps.telemetry.names import DCGM_FIELDS
from tests.binaries import CountingProxy, debian_binary, until
from tests.binaries import PrometheusServer as Server
from tests.support import LoopbackServer, QuietHandler, reply

pytestmark = pytest.mark.django_db(transaction=True)
TEMPLATE = (Path(__file__).parents[1] / "data" / "dcgm" / "h100-node.prom").read_text()
TEMPLATE_HOST = "gpu-a017"
LINE = re.compile(r'^(?P<name>[A-Z_]+)\{gpu="(?P<gpu>\d+)",(?P<rest>.*)\} (?P<value>\S+)$')


def exposition(hosts: list[str], values: dict[tuple[str, str, int], float]) -> str:
    """dcgm-exporter text for `hosts` (each with the template's 8 GPUs); `values` overrides
    (field, host, gpu) → value."""
    out = []
    for line in TEMPLATE.splitlines():
        m = LINE.match(line)
        if m is None:
            out.append(line)
            continue
        for host in hosts:
            value = values.get((m["name"], host, int(m["gpu"])), m["value"])
            rest = m["rest"].replace(f'Hostname="{TEMPLATE_HOST}"', f'Hostname="{host}"')
            out.append(f'{m["name"]}{{gpu="{m["gpu"]}",{rest}}} {value}')
    return "\n".join(out) + "\n"


class FakeExporter(LoopbackServer):
    """A dcgm-exporter on a free loopback port serving `self.text`."""

    def __init__(self) -> None:
        self.text = ""
        owner = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                reply(self, 200, owner.text.encode(), "text/plain; version=0.0.4")

        super().__init__(Handler)


@pytest.fixture(params=["prometheus", "victoria-metrics"])
def stack(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """An exporter, a server scraping it, and a counting proxy in front of the server."""
    kind = request.param
    if kind == "prometheus":
        binary = debian_binary("prometheus", package="prometheus")
    else:
        binary = debian_binary(
            "victoria-metrics", "victoria-metrics-prod", package="victoria-metrics"
        )
    exporter = FakeExporter()
    server = Server(kind, binary, tmp_path / kind, [exporter.address])
    proxy = CountingProxy(server.url)
    try:
        yield {"kind": kind, "exporter": exporter, "server": server, "proxy": proxy}
    finally:
        proxy.close()
        server.stop()
        exporter.close()


@pytest.fixture(autouse=True)
def _allow_loopback(settings: Any) -> None:
    # The destination policy refuses loopback unless listed (apps.fleet.destinations).
    settings.KUAE_SCRAPE_ALLOW = ["127.0.0.0/8"]


def _cluster(name: str, hosts: list[str], url: str) -> Cluster:
    cluster = cluster_create(
        name=name, gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8
    )
    start = timezone.now() - dt.timedelta(days=30)
    nodes_register(
        cluster=cluster, specs=[NodeSpec(hostname=h, rack="r1", in_service_at=start) for h in hosts]
    )
    Cluster.objects.filter(pk=cluster.pk).update(prometheus_url=url)
    cluster.refresh_from_db()
    return cluster


def _run(cluster: Cluster, kind: str) -> CheckRun:
    run = CheckRun.objects.create(cluster=cluster, kind=kind, requested_by="test")
    done = run_execute(run_id=run.pk)
    assert done is not None
    return done


def _scraped(server: Server, host: str, field: str, gpu: int, value: float) -> Callable[[], bool]:
    def check() -> bool:
        rows = server.value(f'{field}{{Hostname="{host}",gpu="{gpu}"}}')
        return any(float(r["value"][1]) == value for r in rows)

    return check


def test_hot_gpu_and_fatal_xid_found_from_prometheus(stack: dict[str, Any]) -> None:
    hosts = ["pn-001", "pn-002"]
    stack["exporter"].text = exposition(
        hosts,
        {
            ("DCGM_FI_DEV_GPU_TEMP", "pn-001", 3): 93,
            ("DCGM_FI_DEV_XID_ERRORS", "pn-002", 5): 79,  # fallen off the bus: out of service
        },
    )
    server: Server = stack["server"]
    until(
        _scraped(server, "pn-001", "DCGM_FI_DEV_GPU_TEMP", 3, 93),
        "the hot GPU scraped",
        [server.log],
    )
    until(
        _scraped(server, "pn-002", "DCGM_FI_DEV_XID_ERRORS", 5, 79), "the XID scraped", [server.log]
    )
    cluster = _cluster("prom", hosts, stack["proxy"].url)

    first = _run(cluster, "thermal")
    assert first.status == RunStatus.DONE, first.error
    hot = CheckResult.objects.get(cluster=cluster, kind="thermal", target="gpu:pn-001/3")
    assert hot.status == ResultStatus.PASS and hot.details["hot_runs"] == 1  # once is not enough
    assert CheckResult.objects.filter(cluster=cluster, kind="thermal").count() == 16 + 1
    second = _run(cluster, "thermal")
    assert second.status == RunStatus.DONE, second.error
    hot.refresh_from_db()
    assert hot.status == ResultStatus.WARN and "93" in hot.message
    assert Incident.objects.filter(cluster=cluster, category="gpu_thermal").count() == 1
    source = CheckResult.objects.get(cluster=cluster, kind="thermal", target=SOURCE_TARGET)
    assert source.status == ResultStatus.PASS and stack["proxy"].url in source.message

    errors = _run(cluster, "gpu_errors")
    assert errors.status == RunStatus.DONE, errors.error
    xid = CheckResult.objects.get(cluster=cluster, kind="gpu_errors", target="gpu:pn-002/5")
    assert xid.status == ResultStatus.FAIL and "XID 79" in xid.message
    assert Node.objects.get(hostname="pn-002").state == NodeState.DRAINED
    assert Node.objects.get(hostname="pn-001").state == NodeState.HEALTHY
    # A persisting gauge is no new error: the next run finds nothing new on that GPU.
    again = _run(cluster, "gpu_errors")
    assert again.status == RunStatus.DONE
    assert Incident.objects.filter(cluster=cluster, category="gpu").count() == 1
    # Heartbeat: the values read from Prometheus are the nodes' signs of life.
    beat = _run(cluster, "heartbeat")
    assert beat.status == RunStatus.DONE
    assert not CheckResult.objects.filter(cluster=cluster, kind="heartbeat", status="fail").exists()


def test_stopped_prometheus_gives_errors_and_changes_nothing(
    stack: dict[str, Any], api: Callable[[str | None], Any], client: Any, users: Any
) -> None:
    hosts = ["pd-001", "pd-002"]
    stack["exporter"].text = exposition(hosts, {("DCGM_FI_DEV_GPU_TEMP", "pd-001", 0): 97})
    server: Server = stack["server"]
    until(
        _scraped(server, "pd-001", "DCGM_FI_DEV_GPU_TEMP", 0, 97),
        "the hot GPU scraped",
        [server.log],
    )
    cluster = _cluster("down", hosts, stack["proxy"].url)
    kinds = ("thermal", "gpu_errors", "heartbeat")
    for kind in kinds:
        assert _run(cluster, kind).status == RunStatus.DONE
    assert CheckResult.objects.filter(cluster=cluster, status="pass").exists()
    changes = NodeStateChange.objects.count()

    server.stop()
    # Nodes silent for longer than the heartbeat limit would be judged down from stale data.
    Node.objects.filter(cluster=cluster).update(last_seen_at=timezone.now() - dt.timedelta(hours=1))
    for kind in kinds:
        for _ in range(2):  # two runs: thermal would warn on the second from stale values
            run = _run(cluster, kind)
            assert run.status == RunStatus.ERROR
            assert stack["proxy"].url in run.error
    results = CheckResult.objects.filter(cluster=cluster, kind__in=kinds)
    assert not results.filter(status="pass").exists()
    for kind in kinds:
        source = results.get(kind=kind, target=SOURCE_TARGET)
        assert source.status == ResultStatus.ERROR
        assert stack["proxy"].url in source.message and "did not answer" in source.message
    assert not results.filter(status__in=("warn", "fail")).exists()
    assert NodeStateChange.objects.count() == changes
    assert set(Node.objects.filter(cluster=cluster).values_list("state", flat=True)) == {"healthy"}
    assert not Incident.objects.filter(cluster=cluster).exists()

    client.force_login(users["otto"])
    page = client.get("/", {"cluster": "down", "panel": "1"})
    assert page.status_code == 200
    assert b"Telemetry source down" in page.content and stack["proxy"].url.encode() in page.content


def test_query_count_is_the_same_at_2_and_20_nodes(stack: dict[str, Any]) -> None:
    small = [f"pq-s{i:02d}" for i in range(2)]
    large = [f"pq-l{i:02d}" for i in range(20)]
    stack["exporter"].text = exposition(small + large, {})
    server: Server = stack["server"]
    until(
        _scraped(server, "pq-l19", "DCGM_FI_DEV_GPU_TEMP", 7, 63),
        "every node scraped",
        [server.log],
    )
    proxy: CountingProxy = stack["proxy"]
    counts = {}
    for name, hosts in (("small", small), ("large", large)):
        cluster = _cluster(name, hosts, proxy.url)
        proxy.requests.clear()
        for kind in ("thermal", "gpu_errors", "heartbeat"):
            assert _run(cluster, kind).status == RunStatus.DONE
        counts[name] = len(proxy.requests)
        gpus = CheckResult.objects.filter(
            cluster=cluster, kind="thermal", target__startswith="gpu:"
        )
        assert gpus.count() == 8 * len(hosts)
    assert counts["small"] == counts["large"] == 3  # one instant query per run
    # Each run reads the fields its check judges; the three read every field between them,
    # and the GPU's identity with the temperature.
    gpu = GPU.objects.get(node__hostname="pq-l19", index=7)
    exposed = {name for field, name in DCGM_FIELDS.items() if f"\n{field}{{" in TEMPLATE}
    assert len(exposed) >= 10 and exposed <= set(gpu.metrics)
    assert gpu.uuid.startswith("GPU-") and gpu.pci_bus and gpu.model
    assert all(r.startswith("POST /api/v1/query") for r in proxy.requests)


def test_node_charts_and_fleet_view_from_prometheus(
    stack: dict[str, Any], client: Any, users: Any
) -> None:
    """Issue 15, item 2: the node page's charts ask `query_range` once per metric and get
    one series per GPU; the fleet view ranks the GPUs Prometheus reports."""
    hosts = ["pc-001", "pc-002"]
    stack["exporter"].text = exposition(
        hosts,
        {
            ("DCGM_FI_DEV_GPU_TEMP", "pc-002", 6): 88,
            ("DCGM_FI_DEV_GPU_UTIL", "pc-001", 2): 0,
        },
    )
    server: Server = stack["server"]
    until(_scraped(server, "pc-002", "DCGM_FI_DEV_GPU_TEMP", 6, 88), "scraped", [server.log])
    cluster = _cluster("charts", hosts, stack["proxy"].url)
    proxy: CountingProxy = stack["proxy"]
    client.force_login(users["mia"])

    def drawn() -> dict[str, Any] | None:
        # VictoriaMetrics (Debian's 1.79) gives a range's points in its last second the
        # value of the point a step before (its latency offset is at least 1 s, whatever
        # -search.latencyOffset says), so a series younger than one step (15 s here) is
        # left out of a range ending now. The page's six queries may fall either side of
        # the moment the node's series turn one step old: wait until every panel has some.
        proxy.requests.clear()
        answer = client.get("/charts/nodes/pc-002/gpus.json", {"range": "1h"})
        assert answer.status_code == 200
        fig: dict[str, Any] = answer.json()
        return fig if len({t["yaxis"] for t in fig["data"]}) == len(GPU_PANELS) else None

    fig = until(drawn, "a point in every chart's range", [server.log])
    assert len(proxy.requests) == 6  # one query_range per metric, all the node's GPUs
    assert all(r.startswith("POST /api/v1/query_range") for r in proxy.requests)
    temps = [t for t in fig["data"] if t["yaxis"] == "y"]
    assert [t["name"] for t in temps] == [f"GPU {i}" for i in range(8)]
    assert len(fig["data"]) == 6 * 8
    assert all(1 <= len(t["x"]) <= 241 for t in fig["data"])  # 1 h at a 15 s step
    assert temps[6]["y"][-1] == 88
    # A custom range: the step still keeps each series under 2,000 points.
    now = timezone.now()
    custom = client.get(
        "/charts/nodes/pc-002/gpus.json",
        {"start": (now - dt.timedelta(days=30)).strftime("%Y-%m-%dT%H:%M"), "end": ""},
    ).json()
    assert all(len(t["x"]) <= 2000 for t in custom["data"])

    proxy.requests.clear()
    html = client.get("/gpus/", {"cluster": cluster.name}).content.decode()
    assert len(proxy.requests) == 1 and proxy.requests[0].startswith("POST /api/v1/query")
    hot = html[html.index('id="gpus-hot"') :]
    assert hot.index(">pc-002<") < hot.index(">pc-001<")  # GPU 6 of pc-002 at 88 °C first
    idle = html[html.index('id="gpus-idle"') :]
    assert idle.index(">pc-001<") < idle.index(">pc-002<")

    server.stop()
    down = client.get("/charts/nodes/pc-002/gpus.json", {"range": "24h"}).json()
    assert down["data"] == [] and "did not answer" in down["layout"]["annotations"][0]["text"]
    page = client.get("/gpus/", {"cluster": cluster.name})
    assert page.status_code == 200 and b"Telemetry source down" in page.content


def amd_and_gaudi_exposition(amd_host: str, gaudi_host: str, *, hot_gpu: int) -> str:
    """AMD device-metrics-exporter text for `amd_host` (8 MI300X GPUs: junction but no edge
    temperature, as the metric list says of MI3xx; the labels of its Slurm page's example
    line) and Intel Gaudi metric exporter text for `gaudi_host` (8 Gaudi: power in mW, a
    `hostname` label as the relabel docs/integrations.md asks for adds it). Built from the
    vendors' published names, not captured from hardware: none is here."""
    out = []
    for i in range(8):
        amd = (
            f'card_model="0x74a1",gpu_id="{i}",gpu_uuid="72ff740f-0000-1000-804c-3b58bf67050{i}",'
            f'hostname="{amd_host}",serial_number="69225100112{i}"'
        )
        out += [
            f"gpu_junction_temperature{{{amd}}} {90 if i == hot_gpu else 60 + i}",
            f"gpu_power_usage{{{amd}}} {600 + i}",
            f"gpu_gfx_activity{{{amd}}} 97",
            f"gpu_used_vram{{{amd}}} 150123",
            # gpu_clock as the metric list's GPU_CLOCK measurements example: one series per
            # clock, two system clocks on this GPU (the higher is its SM clock)
            f'gpu_clock{{clock_index="0",clock_type="data",{amd}}} 22',
            f'gpu_clock{{clock_index="1",clock_type="system",{amd}}} {2100 - i}',
            f'gpu_clock{{clock_index="2",clock_type="system",{amd}}} 132',
            f'gpu_clock{{clock_index="8",clock_type="memory",{amd}}} 900',
        ]
        gaudi = f'Serial="AN000{i}",UUID="01P0-HL2080A0-15-{i}",hostname="{gaudi_host}",id="{i}"'
        out += [
            f"habanalabs_temperature_onchip{{{gaudi}}} {50 + i}",
            f"habanalabs_power_mW{{{gaudi}}} {412000 + 1000 * i}",
            f"habanalabs_utilization{{{gaudi}}} 88",
            f"habanalabs_memory_used_bytes{{{gaudi}}} 68719476736",
            f"habanalabs_clock_soc_mhz{{{gaudi}}} 1600",
        ]
    return "\n".join(out) + "\n"


def test_amd_and_gaudi_node_charts_from_prometheus(
    stack: dict[str, Any], client: Any, users: Any
) -> None:
    """A cluster of one AMD and one Gaudi node: a pull files each GPU under its exporter
    (`source`), and each node's charts ask that exporter's series, one `query_range` per
    panel it publishes, evaluated by the real server (Gaudi's mW → W by the query's `/ 1000`);
    a metric it does not publish is asked nothing and its chart says so."""
    stack["exporter"].text = amd_and_gaudi_exposition("pa-001", "pg-001", hot_gpu=5)
    server: Server = stack["server"]
    until(
        lambda: (
            server.value('gpu_junction_temperature{hostname="pa-001",gpu_id="5"}')
            and server.value('habanalabs_power_mW{hostname="pg-001",id="7"}')
        ),
        "scraped",
        [server.log],
    )
    cluster = _cluster("mixed", ["pa-001", "pg-001"], stack["proxy"].url)
    _run(cluster, "heartbeat")
    amd_gpu = GPU.objects.get(node__hostname="pa-001", index=5)
    assert (amd_gpu.source, amd_gpu.vendor) == ("amd", "amd")
    assert amd_gpu.model == "AMD Instinct MI300X"  # card_model="0x74a1", its PCI device id
    assert amd_gpu.metrics["sm_clock_mhz"] == 2095  # the higher system clock, not memory's
    assert GPU.objects.get(node__hostname="pg-001", index=7).source == "gaudi"
    proxy: CountingProxy = stack["proxy"]
    client.force_login(users["mia"])

    def drawn(host: str, panels: int) -> Callable[[], dict[str, Any] | None]:
        def check() -> dict[str, Any] | None:
            proxy.requests.clear()
            answer = client.get(f"/charts/nodes/{host}/gpus.json", {"range": "1h"})
            assert answer.status_code == 200
            fig: dict[str, Any] = answer.json()
            return fig if len({t["yaxis"] for t in fig["data"]}) == panels else None

        return check

    # AMD: temperature, power, SM clock (gpu_clock's system clocks), utilisation, VRAM; no
    # tensor activity.
    fig = until(drawn("pa-001", 5), "a point in each AMD chart", [server.log])
    assert len(proxy.requests) == 5
    temps = [t for t in fig["data"] if t["yaxis"] == "y"]
    assert [t["name"] for t in temps] == [f"GPU {i}" for i in range(8)]
    assert temps[5]["y"][-1] == 90 and temps[1]["y"][-1] == 61  # junction: no edge published
    clocks = [t for t in fig["data"] if t["yaxis"] == "y3"]
    assert clocks[3]["y"][-1] == 2097  # max of its system clocks: 2097 and 132
    said = [a["text"] for a in fig["layout"]["annotations"]]
    assert said.count("not reported by AMD device-metrics-exporter") == 1
    # Gaudi: every panel but tensor activity; power in W.
    fig = until(drawn("pg-001", 5), "a point in each Gaudi chart", [server.log])
    assert len(proxy.requests) == 5
    power = [t for t in fig["data"] if t["yaxis"] == "y2"]
    assert [t["name"] for t in power] == [f"GPU {i}" for i in range(8)]
    assert power[7]["y"][-1] == 419  # 419000 mW
    memory = [t for t in fig["data"] if t["yaxis"] == "y5"]
    assert memory[0]["y"][-1] == 65536  # 64 GiB in MiB
    said = [a["text"] for a in fig["layout"]["annotations"]]
    assert said.count("not reported by Intel Gaudi metric exporter") == 1
