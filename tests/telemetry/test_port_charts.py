"""The node page's port charts (issue 27, item 3: "a port's counters are charted like a
GPU's"): from KUAE's 5-minute port rollups when the cluster has no Prometheus, per node and
summed over its ports, saying so; per port from a real Prometheus scraping the real Debian
node_exporter on a fake sysfs tree, the error counters as `rate()` and the state."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from apps.fleet.models import Cluster, Node
from apps.fleet.services import NodeSpec, cluster_create, nodes_register
from apps.telemetry.gpu_history import Window
from apps.telemetry.models import Port, PortRollup
from apps.telemetry.port_history import COUNTER_PANELS, node_port_history
from apps.telemetry.promql import MAX_POINTS, port_range_query
from apps.telemetry.rollup import bucket_of
from tests.binaries import NodeExporter, PrometheusServer, debian_binary, until, write_port


def test_the_port_query_selects_the_instance_host_and_splits_by_port() -> None:
    query = port_range_query(
        "node_infiniband_symbol_error_total", ["gpu-7.dc1", "10.0.0.7"], rate_s=120
    )
    assert query == (
        "max by (device, port) (rate(node_infiniband_symbol_error_total"
        '{instance=~"(gpu-7\\\\.dc1|gpu-7|10\\\\.0\\\\.0\\\\.7)(:[0-9]+)?"}[120s]))'
    )
    state = port_range_query("node_infiniband_state_id", ["gpu-7"], rate_s=None)
    assert state.startswith("max by (device, port) (node_infiniband_state_id{instance=~")


@pytest.mark.django_db
def test_rollup_port_charts_per_node_summed_over_ports(
    client: Any, users: Any, nodes: list[Node]
) -> None:
    node = nodes[0]
    Port.objects.create(node=node, device="mlx5_0", port=1, state="ACTIVE", ts=timezone.now())
    start = bucket_of(timezone.now() - dt.timedelta(days=30))
    PortRollup.objects.bulk_create(
        [
            PortRollup(
                node=node,
                bucket=start + dt.timedelta(minutes=5 * i),
                symbol_error=600.0,  # 2/s over a 5-minute bucket
                link_downed=1.0 if i == 8000 else 0.0,
                ports=8,
                not_active=2 if i == 8000 else 0,
            )
            for i in range(30 * 288)
        ],
        batch_size=2000,
    )
    client.force_login(users["mia"])
    fig = client.get(f"/charts/nodes/{node.hostname}/ports.json", {"range": "30d"}).json()
    lines = [t for t in fig["data"] if t.get("name")]
    assert len(lines) == len(COUNTER_PANELS) + 1  # no band: one line a chart
    assert lines[0]["name"] == "Link downed (node, summed over ports)"
    assert all(len(t["x"]) <= MAX_POINTS for t in lines)
    titles = [a["text"] for a in fig["layout"]["annotations"]]
    assert "<b>Symbol errors</b> (/s)" in titles and "<b>Ports not ACTIVE</b> (ports)" in titles
    symbol = next(t for t in lines if t["name"].startswith("Symbol errors"))
    assert symbol["y"][5] == pytest.approx(2.0)  # 30-minute buckets: 6 × 600 / 1800 s
    assert max(lines[-1]["y"]) == 2 and max(lines[0]["y"]) == pytest.approx(1 / 1800)
    assert fig["layout"]["showlegend"] is False
    # the page says what the chart is, with the GPU charts' range buttons
    html = client.get(f"/nodes/{node.hostname}/", {"range": "7d"}).content.decode()
    ports_card = html[html.index('id="ports-h"') : html.index('id="tel-h"')]
    assert "Per node, summed over its 1 port" in ports_card
    assert f"/charts/nodes/{node.hostname}/ports.json?range=7d" in ports_card
    assert 'href="?range=30d#port-charts"' in ports_card
    assert 'aria-current="true">7 d</a>' in ports_card
    # nothing in range is a message, not empty axes; a bad custom range is its problem
    # A line alone draws nothing of one point: a port's first rollup is a dot, the rest lines.
    assert all(t["mode"] == "lines" for t in lines)
    PortRollup.objects.create(node=nodes[2], bucket=bucket_of(timezone.now()), ports=8)
    first = client.get(f"/charts/nodes/{nodes[2].hostname}/ports.json", {"range": "1h"}).json()
    dots = [t for t in first["data"] if t.get("name")]
    assert len(dots) == len(lines) and all(t["mode"] == "lines+markers" for t in dots)
    assert all(t["marker"]["size"] == [6] and t["y"] == [0.0] for t in dots)
    empty = client.get(f"/charts/nodes/{nodes[1].hostname}/ports.json", {"range": "1h"}).json()
    assert "No port readings for this node" in empty["layout"]["annotations"][0]["text"]
    bad = client.get(f"/charts/nodes/{node.hostname}/ports.json", {"start": "soon"}).json()
    assert "dates and times" in bad["layout"]["annotations"][0]["text"]
    assert client.get("/charts/nodes/nope/ports.json").status_code == 404


@pytest.mark.django_db
def test_a_prometheus_that_does_not_answer_is_a_message(
    client: Any, users: Any, nodes: list[Node], settings: Any
) -> None:
    from tests.support import closed_port

    settings.KUAE_SCRAPE_ALLOW = ["127.0.0.0/8"]
    Cluster.objects.update(prometheus_url=f"http://127.0.0.1:{closed_port()}")
    client.force_login(users["mia"])
    fig = client.get(f"/charts/nodes/{nodes[0].hostname}/ports.json").json()
    assert fig["data"] == [] and "did not answer" in fig["layout"]["annotations"][0]["text"]


@pytest.mark.django_db(transaction=True)
def test_per_port_rates_and_state_from_a_real_prometheus(tmp_path: Path, settings: Any) -> None:
    settings.KUAE_SCRAPE_ALLOW = ["127.0.0.0/8"]
    prometheus = debian_binary("prometheus", package="prometheus")
    sysfs = tmp_path / "sys"
    for device in ("mlx5_0", "mlx5_1"):
        write_port(sysfs, device, 1, state="4: ACTIVE", phys_state="5: LinkUp", symbol_error=0,
                   rate="400 Gb/sec (4X NDR)",
                   link_downed=0, port_rcv_errors=0)  # fmt: skip
    exporter = NodeExporter(sysfs, tmp_path / "node_exporter.log")
    server = None
    try:
        exporter.scrape()
        target = exporter.url.split("/")[2]
        server = PrometheusServer("prometheus", prometheus, tmp_path / "prom", [target])
        cluster = cluster_create(
            name="pe", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8
        )
        (node,) = nodes_register(
            cluster=cluster, specs=[NodeSpec(hostname="pe-001", addresses=("127.0.0.1",))]
        )
        Cluster.objects.filter(pk=cluster.pk).update(prometheus_url=server.url)
        node = Node.objects.select_related("cluster").get(pk=node.pk)
        until(lambda: server.value("node_infiniband_symbol_error_total"), "scraped", [server.log])
        # mlx5_1 gains symbol errors and goes down; mlx5_0 stays clean
        write_port(sysfs, "mlx5_1", 1, state="1: DOWN", symbol_error=5000)

        def drawn() -> Any:
            now = timezone.now()
            window = Window("1h", "1 h", now - dt.timedelta(hours=1), now, 15)
            history = node_port_history(node=node, window=window)
            assert not history.error, history.error
            panels = {panel.key: traces for panel, traces in history.panels}
            symbol = {t.name: t for t in panels["symbol_error"]}
            state = {t.name: t for t in panels["state"]}
            ok = (
                symbol.get("mlx5_1/1")
                and any((v or 0) > 0 for v in symbol["mlx5_1/1"].y)
                and state.get("mlx5_1/1")
                and state["mlx5_1/1"].y[-1] == 1
            )
            return (history, symbol, state) if ok else None

        history, symbol, state = until(drawn, "a rate and a DOWN state", [server.log])
        assert set(symbol) == {"mlx5_0/1", "mlx5_1/1"} == set(state)
        assert max(v or 0 for v in symbol["mlx5_0/1"].y) == 0
        assert state["mlx5_0/1"].y[-1] == 4  # ACTIVE
        assert history.per_gpu and "rate over 2 min" in history.note
        assert len(history.panels) == len(COUNTER_PANELS) + 1
    finally:
        if server is not None:
            server.stop()
        exporter.stop()
