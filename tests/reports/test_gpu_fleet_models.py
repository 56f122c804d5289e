"""The GPUs page compares SM clocks within a GPU model (docs/integrations.md, 2d. Prometheus,
the GPUs page): in a cluster of H100s and MI300Xs, busy H100s at their usual clock are not
"throttled" beside the MI300Xs' higher clock, while one slow H100 among H100s is; a blank
model is the cluster's `gpu_model`. Both sources: the posted telemetry ranked in the
database (a bounded number of queries whatever the models) and a real Prometheus
(Debian's `prometheus`) scraping dcgm-exporter text for the H100s and AMD
device-metrics-exporter text for the MI300Xs — the AMD text is built from AMD's published
metric names and labels (tests/health/test_prometheus_real.py), not captured from
hardware: none is here."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.fleet.models import GPU, Cluster
from apps.fleet.services import NodeSpec, nodes_register
from apps.reports.gpu_fleet import GPUValues, gpu_fleet, rank_gpus
from tests.binaries import CountingProxy, until
from tests.binaries import PrometheusServer as Server
from tests.health.test_prometheus_real import (  # noqa: F401 (fixtures used by name)
    _allow_loopback,
    _cluster,
    amd_and_gaudi_exposition,
    exposition,
    stack,
)

# An H100's clock under a sustained load (below its 1,980 MHz boost) and an MI300X's peak:
# the H100s are 16 % below the MI300Xs, which a cluster-wide highest would call throttled.
H100_MHZ = 1755
MI300X_MHZ = 2100
SLOW_MHZ = 1400  # 20 % below the H100s' highest
# The models' one names (docs/pages.md, One name per model): the cluster's "H100" and a
# stored "MI300X" are filed and compared under them.
H100 = "NVIDIA H100 80GB HBM3"
MI300X = "AMD Instinct MI300X"


def _throttled(rankings: Any) -> list[tuple[str, int]]:
    return [(r.gpu.hostname, r.gpu.index) for r in rankings.throttled]


def test_rank_gpus_compares_each_clock_with_its_models_highest() -> None:
    def gpu(host: str, i: int, model: str, clock: float, util: float = 95) -> GPUValues:
        return GPUValues(host, i, {"gpu_util": util, "sm_clock_mhz": clock}, model)

    h100s = [gpu("h", i, "H100", H100_MHZ) for i in range(4)]
    mi300xs = [gpu("a", i, "MI300X", MI300X_MHZ - i) for i in range(4)]
    ranked = rank_gpus([*h100s, *mi300xs])
    assert ranked.throttled == []
    assert ranked.max_clocks == {"H100": H100_MHZ, "MI300X": MI300X_MHZ}
    # Every H100's shortfall is against the H100s' highest: none below it.
    assert {r.shortfall for r in ranked.least_utilised if r.gpu.model == "H100"} == {0.0}
    slow = gpu("h", 9, "H100", SLOW_MHZ)
    idle = gpu("a", 9, "MI300X", 345, util=0)  # power saving, not throttling
    ranked = rank_gpus([*h100s, *mi300xs, slow, idle])
    assert _throttled(ranked) == [("h", 9)]
    assert ranked.throttled[0].shortfall == pytest.approx(1 - SLOW_MHZ / H100_MHZ)


def _post(cluster: Cluster, now: dt.datetime, clocks: dict[tuple[str, int], float]) -> None:
    """Fresh values for every GPU of `cluster`: busy, at `clocks` (host, index) → MHz."""
    rows = []
    for g in GPU.objects.filter(node__cluster=cluster).select_related("node"):
        clock = clocks[(g.node.hostname, g.index)]
        g.metrics = {"temp_c": 60, "gpu_util": 95, "sm_clock_mhz": clock, "power_w": 600}
        g.updated_at = now - dt.timedelta(seconds=30)
        rows.append(g)
    GPU.objects.bulk_update(rows, ["metrics", "updated_at"])


@pytest.mark.django_db
def test_posted_mixed_cluster_flags_only_the_slow_h100(
    cluster: Cluster, client: Any, users: Any
) -> None:
    hosts = ["h-001", "h-002", "a-001"]
    nodes_register(cluster=cluster, specs=[NodeSpec(hostname=h) for h in hosts])
    GPU.objects.filter(node__hostname="a-001").update(model="MI300X", vendor="amd")
    # No model reported: the cluster's (H100), the slow_node check's rule.
    GPU.objects.filter(node__hostname="h-001", index=0).update(model="")
    clocks = {(h, i): H100_MHZ for h in hosts[:2] for i in range(8)}
    clocks |= {("a-001", i): MI300X_MHZ - i for i in range(8)}
    now = timezone.now()
    _post(cluster, now, clocks)
    with CaptureQueriesContext(connection) as queries:
        ranked = gpu_fleet(cluster=cluster, now=now).rankings
    assert ranked.throttled == [] and ranked.counted == 24
    assert ranked.max_clocks == {H100: H100_MHZ, MI300X: MI300X_MHZ}
    # count and clocks per model, three lists, the listed GPUs' nodes and running jobs
    assert len(queries) == 6

    GPU.objects.filter(node__hostname="h-002", index=3).update(model="")
    _post(cluster, now, clocks | {("h-002", 3): SLOW_MHZ})
    with CaptureQueriesContext(connection) as queries:
        ranked = gpu_fleet(cluster=cluster, now=now).rankings
    assert _throttled(ranked) == [("h-002", 3)]
    assert ranked.throttled[0].gpu.model == H100
    assert ranked.throttled[0].shortfall == pytest.approx(1 - SLOW_MHZ / H100_MHZ)
    # The same bound as with one model: two models are two rows of the one aggregate
    # query, and the shortfall one `When` per model in the throttled list's query.
    assert len(queries) == 6

    client.force_login(users["mia"])
    html = client.get("/gpus/", {"cluster": cluster.name}).content.decode()
    assert f"per GPU model: {MI300X} {MI300X_MHZ:,} MHz; {H100} {H100_MHZ:,} MHz." in html
    throttled = html[html.index('id="gpus-throttled"') :]
    throttled = throttled[: throttled.index("</table>")]
    assert ">h-002<" in throttled and ">h-001<" not in throttled and ">a-001<" not in throttled
    assert throttled.count('<th scope="col">Model</th>') == 1  # several models: named per GPU
    # One model: no Model column (the header names it once).
    GPU.objects.filter(node__cluster=cluster).exclude(model="").update(model="H100")
    html = client.get("/gpus/", {"cluster": cluster.name}).content.decode()
    assert '<th scope="col">Model</th>' not in html and f"per GPU model: {H100} " in html


def _empty_texts(html: str) -> dict[str, str]:
    """Each ranked table's empty-row text, by table ('' when it lists GPUs)."""
    out = {}
    for key in ("hot", "idle", "throttled"):
        table = html[html.index(f'id="gpus-{key}"') :]
        table = table[: table.index("</table>")]
        start = table.find('class="empty">')
        out[key] = table[start + 14 : table.index("</td>", start)] if start >= 0 else ""
    return out


@pytest.mark.django_db
def test_an_empty_table_says_why_never_a_pass_it_could_not_judge(
    cluster: Cluster, client: Any, users: Any
) -> None:
    nodes_register(cluster=cluster, specs=[NodeSpec(hostname="m-001")])
    client.force_login(users["mia"])
    html = client.get("/gpus/", {"cluster": cluster.name}).content.decode()
    assert set(_empty_texts(html).values()) == {
        "No GPU has posted telemetry in the last 15 minutes."
    }
    # GPUs that report no SM clock (as Moore Threads' through the node agent): the hottest
    # are listed, and "Most throttled" says it could not judge, not that none is throttled.
    now = timezone.now()
    GPU.objects.filter(node__cluster=cluster).update(
        metrics={"temp_c": 61, "gpu_util": 97}, updated_at=now
    )
    said = _empty_texts(client.get("/gpus/", {"cluster": cluster.name}).content.decode())
    assert said["hot"] == said["idle"] == ""
    assert said["throttled"] == (
        "Not judged by clock: none of the 8 GPUs ranked reports its SM clock. None reports "
        "a reason that slows its clocks either."
    )
    _post(cluster, now, {("m-001", i): H100_MHZ for i in range(8)})
    said = _empty_texts(client.get("/gpus/", {"cluster": cluster.name}).content.decode())
    assert said["throttled"] == "None of the 8 GPUs ranked is throttled."
    GPU.objects.filter(node__cluster=cluster).update(metrics={"power_w": 500}, updated_at=now)
    said = _empty_texts(client.get("/gpus/", {"cluster": cluster.name}).content.decode())
    assert said["hot"] == "None of the 8 GPUs ranked reports its temperature."
    assert said["idle"] == "None of the 8 GPUs ranked reports its utilisation."


@pytest.mark.django_db
def test_prometheus_mixed_cluster_flags_only_the_slow_h100(
    stack: dict[str, Any],  # noqa: F811
    client: Any,
    users: Any,
) -> None:
    """The models come from the exporters' identity labels (the stored GPUs say H100 for all
    until a pull): the MI300Xs' series name their PCI device id, read as "AMD Instinct
    MI300X". ph-001's GPU 0 sends no series with its identity, so its stored model counts."""
    h100 = ["ph-001", "ph-002"]
    clocks = {("DCGM_FI_DEV_SM_CLOCK", h, i): H100_MHZ for h in h100 for i in range(8)}
    clocks |= {("DCGM_FI_DEV_SM_CLOCK", h, 0 if h == "ph-001" else 3): SLOW_MHZ for h in h100}
    text = exposition(h100, clocks)
    no_identity = 'DCGM_FI_DEV_GPU_TEMP{gpu="0",'
    text = "".join(
        line
        for line in text.splitlines(keepends=True)
        if not (line.startswith(no_identity) and 'Hostname="ph-001"' in line)
    )
    stack["exporter"].text = text + amd_and_gaudi_exposition("pa-001", "pg-001", hot_gpu=5)
    server: Server = stack["server"]
    until(
        lambda: (
            server.value('DCGM_FI_DEV_SM_CLOCK{Hostname="ph-002",gpu="3"}')
            and server.value('gpu_clock{hostname="pa-001",gpu_id="7"}')
        ),
        "scraped",
        [server.log],
    )
    cluster = _cluster("mixedclk", [*h100, "pa-001"], stack["proxy"].url)
    GPU.objects.filter(node__hostname="ph-001", index=0).update(model="NVIDIA H100 80GB HBM3")
    proxy: CountingProxy = stack["proxy"]
    proxy.requests.clear()
    fleet = gpu_fleet(cluster=cluster, now=timezone.now())
    assert fleet.error == "" and len(proxy.requests) == 1
    ranked = fleet.rankings
    assert ranked.counted == 24
    assert ranked.max_clocks == {
        "AMD Instinct MI300X": MI300X_MHZ,
        "NVIDIA H100 80GB HBM3": H100_MHZ,
    }
    assert _throttled(ranked) == [("ph-001", 0), ("ph-002", 3)]
    assert all(r.shortfall == pytest.approx(1 - SLOW_MHZ / H100_MHZ) for r in ranked.throttled)

    client.force_login(users["mia"])
    html = client.get("/gpus/", {"cluster": cluster.name}).content.decode()
    assert f"AMD Instinct MI300X {MI300X_MHZ:,} MHz; NVIDIA H100 80GB HBM3 {H100_MHZ:,} MHz" in html
