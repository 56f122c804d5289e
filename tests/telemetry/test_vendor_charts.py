"""The node page's GPU charts from a cluster's Prometheus for AMD and Gaudi nodes
(docs/integrations.md, 2d. Prometheus as the telemetry source): each panel asks the series
the node's exporter publishes for the same KUAE name (its mapping file), by that exporter's
index label and in KUAE's unit, still one query per panel; a name the exporter cannot
publish is asked nothing and its panel says "not reported by <exporter>".

No AMD or Gaudi exporter, and no Prometheus evaluating their series, runs in these tests:
the answers below are recorded `query_range` answers in the shape Prometheus gives for a
`max by (<index label>)` query (one series per GPU, labelled with the exporter's index label
only), with the vendors' published series names and labels (AMD's metric list,
https://github.com/ROCm/device-metrics-exporter/blob/main/docs/configuration/metricslist.md;
Intel's https://docs.habana.ai/en/latest/Orchestration/Prometheus_Metric_Exporter.html).
The same through a real Prometheus: tests/health/test_prometheus_real.py."""

from __future__ import annotations

import datetime as dt
import json
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest

from apps.fleet.models import GPU, Cluster, Node
from apps.telemetry.exporters import exporter
from apps.telemetry.gpu_charts import gpu_history_figure
from apps.telemetry.gpu_history import GPU_PANELS, Window, node_exporter, node_gpu_history
from apps.telemetry.promql import exporter_range_query
from tests.support import LoopbackServer, QuietHandler, reply

NOW = dt.datetime(2026, 1, 10, 12, 0, tzinfo=dt.UTC)
WINDOW = Window("1h", "1 h", NOW - dt.timedelta(hours=1), NOW, 15)
T0 = NOW.timestamp() - 30


def _matrix(label: str, values: dict[int, list[str]]) -> dict[str, Any]:
    points = {gpu: [[T0 + 15 * i, v] for i, v in enumerate(ys)] for gpu, ys in values.items()}
    return {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                {"metric": {label: str(gpu)}, "values": pairs} for gpu, pairs in points.items()
            ],
        },
    }


# Recorded answers, by the series a query names first: AMD's (an MI300X publishes junction
# but no edge temperature), Gaudi's (power already divided to W by the query's `/ 1000`).
ANSWERS = {
    "gpu_edge_temperature": _matrix("gpu_id", {1: ["71", "72"], 0: ["70", "70"]}),
    "gpu_power_usage": _matrix("gpu_id", {0: ["612", "615"], 1: ["598", "600"]}),
    "gpu_gfx_activity": _matrix("gpu_id", {0: ["97", "98"], 1: ["0", "0"]}),
    "gpu_used_vram": _matrix("gpu_id", {0: ["150123", "150200"], 1: ["10", "10"]}),
    "habanalabs_temperature_onchip": _matrix("id", {3: ["52", "53"]}),
    "habanalabs_power_mW": _matrix("id", {3: ["412", "415"]}),
}
EMPTY = {"status": "success", "data": {"resultType": "matrix", "result": []}}


class FakePrometheus(LoopbackServer):
    """A loopback server answering `query_range` with the recorded answer of the first series
    a query names, and keeping every query it was asked."""

    def __init__(self) -> None:
        self.queries: list[str] = []
        owner = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                query = urllib.parse.parse_qs(body)["query"][0]
                owner.queries.append(query)
                named = sorted((query.find(name), name) for name in ANSWERS if name in query)
                payload = json.dumps(ANSWERS[named[0][1]] if named else EMPTY).encode()
                reply(self, 200, payload, "application/json")

        super().__init__(Handler)


@pytest.fixture
def prometheus(settings: Any, cluster: Cluster) -> Iterator[FakePrometheus]:
    settings.KUAE_SCRAPE_ALLOW = ["127.0.0.0/8"]
    server = FakePrometheus()
    Cluster.objects.filter(pk=cluster.pk).update(prometheus_url=server.url)
    yield server
    server.close()


def _report_as(node: Node, source: str, vendor: str) -> Node:
    GPU.objects.filter(node=node).update(source=source, vendor=vendor)
    return Node.objects.select_related("cluster").get(pk=node.pk)


def test_each_exporter_is_asked_its_own_series_index_label_and_unit() -> None:
    host = "mi300-01"
    amd = exporter_range_query(exporter("amd"), "temp_c", host)
    assert amd is not None and amd.startswith("max by (gpu_id) (")
    # Edge where published, junction only for the GPUs without it (PromQL's `or`), one query;
    # each also under the `amd_` prefix a site may set.
    assert amd.index("gpu_edge_temperature") < amd.index("gpu_junction_temperature")
    assert '__name__=~"gpu_edge_temperature|amd_gpu_edge_temperature"' in amd
    assert "max by (gpu)" not in amd
    gaudi_power = exporter_range_query(exporter("gaudi"), "power_w", "g1")
    assert gaudi_power is not None and gaudi_power.startswith("(max by (id) (habanalabs_power_mW{")
    assert gaudi_power.endswith(") / 1000")  # mW → W in the query
    gaudi_memory = exporter_range_query(exporter("gaudi"), "mem_used_mib", "g1")
    assert gaudi_memory is not None and gaudi_memory.endswith(") / 1048576")  # bytes → MiB
    # dcgm-exporter's query is the one the charts always asked (host "mi300-01": no dot).
    assert exporter_range_query(exporter("dcgm"), "temp_c", host) == " or ".join(
        f'max by (gpu) (DCGM_FI_DEV_GPU_TEMP{{{label}=~"mi300-01|mi300-01\\\\..+"}})'
        for label in ("Hostname", "hostname")
    )
    # AMD's SM clock: its system clocks only, in either spelling of `clock_type`.
    clock = exporter_range_query(exporter("amd"), "sm_clock_mhz", host)
    assert clock is not None and 'clock_type=~"GPU_CLOCK_TYPE_SYSTEM|system"' in clock
    assert clock.startswith('max by (gpu_id) ({__name__=~"gpu_clock|amd_gpu_clock",')
    # Not in the file: no query.
    assert exporter_range_query(exporter("amd"), "tensor_active", host) is None
    assert exporter_range_query(exporter("gaudi"), "tensor_active", host) is None


@pytest.mark.django_db
def test_node_exporter_is_chosen_per_node_from_its_gpus(nodes: list[Node]) -> None:
    amd = _report_as(nodes[0], "amd", "amd")
    gaudi = _report_as(nodes[1], "", "intel")  # posted JSON: no source, the vendor says
    assert node_exporter(amd).slug == "amd" and node_exporter(gaudi).slug == "gaudi"
    # Nothing reported yet: the cluster's model (H100) says NVIDIA.
    assert node_exporter(nodes[2]).slug == "dcgm"


@pytest.mark.django_db
def test_amd_node_charts_its_series_and_says_what_amd_does_not_report(
    prometheus: FakePrometheus, nodes: list[Node]
) -> None:
    node = _report_as(nodes[0], "amd", "amd")
    history = node_gpu_history(node=node, window=WINDOW)
    assert history.error == "" and "AMD device-metrics-exporter" in history.note
    asked = [p.key for p, _ in history.panels if p.key not in history.blind]
    assert len(prometheus.queries) == len(asked)  # one query per panel it can fill
    assert not any("DCGM_" in q for q in prometheus.queries)
    assert all("max by (gpu_id)" in q for q in prometheus.queries)
    assert history.blind["tensor_active"] == "AMD device-metrics-exporter"
    panels = {p.key: traces for p, traces in history.panels}
    assert [p.key for p, _ in history.panels] == [p.key for p in GPU_PANELS]
    assert [t.name for t in panels["temp_c"]] == ["GPU 0", "GPU 1"]  # by index, gpu_id
    assert panels["temp_c"][1].y == [71.0, 72.0]
    assert panels["power_w"][0].y == [612.0, 615.0]
    assert panels["tensor_active"] == []
    fig = gpu_history_figure(history)
    said = [a["text"] for a in fig["layout"]["annotations"]]
    assert "not reported by AMD device-metrics-exporter" in said
    # Centred on its own chart's cell: the last of two columns (tensor activity).
    (gap,) = (a for a in fig["layout"]["annotations"] if a["text"].startswith("not reported"))
    domain = fig["layout"][f"xaxis{len(GPU_PANELS)}"]["domain"]
    assert gap["xanchor"] == "center" and gap["x"] == (domain[0] + domain[1]) / 2
    assert {t["name"] for t in fig["data"]} == {"GPU 0", "GPU 1"}


@pytest.mark.django_db
def test_mixed_cluster_each_node_asks_its_own_exporter(
    prometheus: FakePrometheus, nodes: list[Node], client: Any, users: Any
) -> None:
    _report_as(nodes[0], "amd", "amd")
    gaudi = _report_as(nodes[1], "gaudi", "intel")
    client.force_login(users["mia"])
    fig = client.get(f"/charts/nodes/{gaudi.hostname}/gpus.json", {"range": "1h"}).json()
    assert prometheus.queries and all("habanalabs_" in q for q in prometheus.queries)
    assert any(q.endswith(") / 1000") for q in prometheus.queries)
    temps = [t for t in fig["data"] if t["yaxis"] == "y"]
    assert [t["name"] for t in temps] == ["GPU 3"] and temps[0]["y"] == [52, 53]
    said = [a["text"] for a in fig["layout"]["annotations"]]
    assert "not reported by Intel Gaudi metric exporter" in said
    prometheus.queries.clear()
    client.get(f"/charts/nodes/{nodes[2].hostname}/gpus.json", {"range": "1h"})
    assert len(prometheus.queries) == len(GPU_PANELS)  # an NVIDIA node: dcgm, all six
    assert all("DCGM_FI_" in q and "max by (gpu)" in q for q in prometheus.queries)
