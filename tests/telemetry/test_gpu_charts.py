"""The node page's per-GPU charts (issue 15, item 2): the step keeps every series at 2,000
points or fewer, a range or a custom range is read from the URL, the charts come from the
rollups when the cluster has no Prometheus (and say that there is no per-GPU history), a
Prometheus that does not answer is a message in the chart area, and the fleet view of GPUs
ranks posted telemetry. Against a real Prometheus: tests/health/test_prometheus_real.py."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.utils import timezone

from apps.fleet.models import GPU, Cluster, Node
from apps.reports.gpu_fleet import GPUValues, rank_gpus, reasons_of
from apps.telemetry.exporters import exporter
from apps.telemetry.gpu_charts import gpu_history_figure
from apps.telemetry.gpu_history import GPU_PANELS, GPUHistory, Trace, Window, window_from
from apps.telemetry.models import NodeRollup
from apps.telemetry.promql import MAX_POINTS, exporter_range_query, matrix_of, range_step
from tests.support import closed_port

NOW = dt.datetime(2026, 1, 10, 12, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("hours", "step"), [(1, 15), (6, 15), (24, 60), (24 * 7, 600), (24 * 30, 1800)]
)
def test_step_keeps_every_range_under_2000_points(hours: int, step: int) -> None:
    start = NOW - dt.timedelta(hours=hours)
    assert range_step(start, NOW) == step
    assert (hours * 3600) // step + 1 <= MAX_POINTS
    # A step one notch finer would not: the step is the finest that fits (past 6 h).
    if hours > 6:
        assert (hours * 3600) // (step // 2) + 1 > MAX_POINTS


def test_range_query_per_gpu_and_matrix_reading() -> None:
    query = exporter_range_query(exporter("dcgm"), "temp_c", "gpu-a017.dc1.example")
    assert query is not None and query.startswith('max by (gpu) (DCGM_FI_DEV_GPU_TEMP{Hostname=~"')
    assert 'hostname=~"' in query and " or " in query
    answer = {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                {"metric": {"gpu": "0"}, "values": [[1, "50"], [2, "NaN"], [3, "51"]]},
                {"metric": {"gpu": "1"}, "values": [[1, "9223372036854775794"]]},
            ],
        },
    }
    assert matrix_of(answer) == [({"gpu": "0"}, [(1.0, 50.0), (3.0, 51.0)]), ({"gpu": "1"}, [])]


def test_window_from_range_custom_and_problems() -> None:
    window, problem = window_from({"range": "30d"}, now=NOW)
    assert (window.key, window.step_s, problem) == ("30d", 1800, "")
    assert window.end - window.start == dt.timedelta(days=30)
    window, problem = window_from({"start": "2026-01-05T08:00", "end": "2026-01-06T08:00"}, now=NOW)
    assert window.key == "custom" and problem == ""
    assert window.start == dt.datetime(2026, 1, 5, 8, tzinfo=dt.UTC) and window.step_s == 60
    for bad, words in (
        ({"start": "yesterday"}, "dates and times"),
        ({"start": "2026-01-09T08:00", "end": "2026-01-08T08:00"}, "before the end"),
        ({"start": "2025-11-01T00:00", "end": "2026-01-08T00:00"}, "at most 31 days"),
    ):
        window, problem = window_from(bad, now=NOW)
        assert words in problem and window.key == "24h"
    assert window_from({"range": "nonsense"}, now=NOW)[0].key == "24h"


def _history(gpus: int, points: int) -> GPUHistory:
    window = Window("30d", "30 d", NOW - dt.timedelta(days=30), NOW, 1800)
    x = [NOW.timestamp() - 1800 * i for i in range(points)][::-1]
    panels = [
        (p, [Trace(f"GPU {g}", x, [float(g)] * points, gpu=g) for g in range(gpus)])
        for p in GPU_PANELS
    ]
    return GPUHistory(window, "prometheus", per_gpu=True, panels=panels)


def test_figure_one_trace_per_gpu_per_panel_same_colour_capped() -> None:
    fig = gpu_history_figure(_history(8, 1441))
    assert len(fig["data"]) == 6 * 8
    assert all(len(t["x"]) == len(t["y"]) <= MAX_POINTS for t in fig["data"])
    by_gpu: dict[str, set[str]] = {}
    for t in fig["data"]:
        by_gpu.setdefault(t["name"], set()).add(t["line"]["color"])
    assert len(by_gpu) == 8 and all(len(c) == 1 for c in by_gpu.values())
    assert len({next(iter(c)) for c in by_gpu.values()}) == 8  # eight distinct colours
    assert sum(t["showlegend"] for t in fig["data"]) == 8  # one legend entry per GPU
    assert {t["yaxis"] for t in fig["data"]} == {"y", "y2", "y3", "y4", "y5", "y6"}
    assert fig["config"]["displaylogo"] is False
    titles = [a["text"] for a in fig["layout"]["annotations"]]
    assert "<b>Temperature</b> (°C)" in titles and "<b>Tensor activity</b> (0–1)" in titles
    # A source sending more than 2,000 points is thinned, never drawn whole.
    fig = gpu_history_figure(_history(1, 5000))
    assert all(len(t["x"]) <= MAX_POINTS for t in fig["data"])


def test_a_chart_with_no_readings_says_so_not_bare_axes() -> None:
    history = _history(2, 10)
    clock = next(i for i, (p, _) in enumerate(history.panels) if p.key == "sm_clock_mhz")
    panel, _ = history.panels[clock]
    history.panels[clock] = (panel, [])  # as a Moore Threads GPU's SM clock
    fig = gpu_history_figure(history)
    said = [a["text"] for a in fig["layout"]["annotations"]]
    assert said.count(f"no readings over {history.window.label}") == 1
    note = next(a for a in fig["layout"]["annotations"] if a["text"].startswith("no readings"))
    domain = fig["layout"][f"xaxis{clock + 1}"]["domain"]
    assert note["x"] == (domain[0] + domain[1]) / 2  # on its own chart
    assert not any(
        a["text"].startswith("no readings")
        for a in gpu_history_figure(_history(2, 10))["layout"]["annotations"]
    )


def test_figure_for_an_error_is_a_message() -> None:
    history = _history(8, 10)
    history.panels, history.error = [], "telemetry source http://p:9090 did not answer: refused"
    fig = gpu_history_figure(history)
    assert fig["data"] == []
    assert "did not answer" in fig["layout"]["annotations"][0]["text"]
    assert fig["layout"]["xaxis"] == {"visible": False}


def _page(client: Any, users: Any) -> Any:
    client.force_login(users["mia"])
    return client


@pytest.mark.django_db
def test_rollup_charts_without_prometheus(client: Any, users: Any, nodes: list[Node]) -> None:
    node = nodes[0]
    now = timezone.now()
    start = (now - dt.timedelta(days=30)).replace(second=0, microsecond=0)
    start -= dt.timedelta(minutes=start.minute % 5)
    rows = []
    # 30 days of 5-minute rollups, and three buckets past now: the 1-hour window is
    # read later, so a clock that crosses a 5-minute mark meanwhile still finds it full
    for i in range(30 * 288 + 3):
        values: dict[str, Any] = {}
        for p in GPU_PANELS:
            values |= {f"{p.key}_min": 40.0, f"{p.key}_max": 60.0}
            values |= {f"{p.key}_sum": 400.0, f"{p.key}_n": 8}
        rows.append(NodeRollup(node=node, bucket=start + dt.timedelta(minutes=5 * i), **values))
    NodeRollup.objects.bulk_create(rows, batch_size=2000)
    browser = _page(client, users)
    fig = browser.get(f"/charts/nodes/{node.hostname}/gpus.json", {"range": "30d"}).json()
    means = [t for t in fig["data"] if t.get("name")]
    assert len(means) == 6 and all(t["name"].endswith("(node mean)") for t in means)
    assert len(fig["data"]) == 6 * 3  # each mean with its min-max band
    assert all(len(t["x"]) <= MAX_POINTS for t in fig["data"])
    assert 1400 <= len(means[0]["x"]) <= 1442  # 30-minute buckets over 30 days
    assert means[0]["y"][5] == pytest.approx(50.0)
    short = browser.get(f"/charts/nodes/{node.hostname}/gpus.json", {"range": "1h"}).json()
    assert 12 <= len([t for t in short["data"] if t.get("name")][0]["x"]) <= 13
    html = browser.get(f"/nodes/{node.hostname}/", {"range": "7d"}).content.decode()
    assert "KUAE keeps no history per GPU" in html
    assert "gpus.json?range=7d" in html and 'aria-current="true">7 d<' in html
    html = browser.get(
        f"/nodes/{node.hostname}/", {"start": "2026-01-09T00:00", "end": "2026-01-08T00:00"}
    ).content.decode()
    assert "The start must be before the end" in html


@pytest.mark.django_db
def test_prometheus_down_is_a_message_not_a_crash(
    client: Any, users: Any, cluster: Cluster, nodes: list[Node], settings: Any
) -> None:
    settings.KUAE_SCRAPE_ALLOW = ["127.0.0.0/8"]
    url = f"http://127.0.0.1:{closed_port()}"
    Cluster.objects.filter(pk=cluster.pk).update(prometheus_url=url)
    browser = _page(client, users)
    answer = browser.get(f"/charts/nodes/{nodes[0].hostname}/gpus.json", {"range": "6h"})
    assert answer.status_code == 200
    fig = answer.json()
    assert fig["data"] == [] and url in fig["layout"]["annotations"][0]["text"]
    assert "did not answer" in fig["layout"]["annotations"][0]["text"]
    page = browser.get("/gpus/", {"cluster": cluster.name})
    assert page.status_code == 200
    assert b"Telemetry source down" in page.content and url.encode() in page.content


def test_ranking_and_throttle_reasons() -> None:
    def gpu(host: str, i: int, **m: float) -> GPUValues:
        return GPUValues(host, i, m)

    ranked = rank_gpus(
        [
            gpu("a", 0, temp_c=60, gpu_util=95, sm_clock_mhz=1980),
            gpu("a", 1, temp_c=88, gpu_util=97, sm_clock_mhz=1500),  # hot and slow: throttled
            gpu("b", 0, temp_c=40, gpu_util=0, sm_clock_mhz=345),  # idle: not throttled
            gpu("b", 1, temp_c=70, gpu_util=90, sm_clock_mhz=1900, sm_clock_throttle=0x40),
            gpu("c", 0, gpu_util=12),
        ],
        top=3,
    )
    assert [(r.gpu.hostname, r.gpu.index) for r in ranked.hottest] == [("a", 1), ("b", 1), ("a", 0)]
    assert [(r.gpu.hostname, r.gpu.index) for r in ranked.least_utilised] == [
        ("b", 0),
        ("c", 0),
        ("b", 1),
    ]
    assert [(r.gpu.hostname, r.gpu.index) for r in ranked.throttled] == [("a", 1), ("b", 1)]
    assert ranked.max_clocks == {"": 1980} and ranked.throttled[1].reasons == ["hardware thermal"]
    assert reasons_of(0x1 | 0x4 | 0x8) == ["power cap", "hardware slowdown"]


@pytest.mark.django_db
def test_fleet_view_orders_posted_telemetry_with_jobs(
    api: Any, client: Any, users: Any, nodes: list[Node], job: Any
) -> None:
    now = timezone.now()
    batch = []
    for n, node in enumerate(nodes[:4]):
        for g in range(8):
            metrics = {"temp_c": 50 + n, "gpu_util": 90, "sm_clock_mhz": 1980, "power_w": 600}
            if (n, g) == (2, 5):
                metrics |= {"temp_c": 91}
            if (n, g) == (3, 1):
                metrics |= {"gpu_util": 0}
            if (n, g) == (1, 7):
                metrics |= {"sm_clock_mhz": 1200}
            batch.append(
                {"node": node.hostname, "gpu": g, "ts": now.isoformat(), "metrics": metrics}
            )
    answer = api("ada").post("/api/v1/ingest/telemetry/", {"samples": batch}, format="json")
    assert answer.status_code in (200, 201, 202), answer.content
    GPU.objects.filter(node=nodes[5]).update(
        metrics={"temp_c": 99}, updated_at=now - dt.timedelta(hours=2)
    )
    browser = _page(client, users)
    html = browser.get("/gpus/", {"cluster": "c1"}).content.decode()
    hot = html[html.index('id="gpus-hot"') :]
    assert hot.index(">gpu002<") < hot.index(">gpu003<")  # 91 °C first
    assert ">gpu005<" not in html  # stale values are not ranked
    idle = html[html.index('id="gpus-idle"') :]
    assert idle.index(">gpu003<") < idle.index(">gpu000<")
    throttled = html[
        html.index('id="gpus-throttled"') : html.index(
            "</table>", html.index('id="gpus-throttled"')
        )
    ]
    assert ">gpu001<" in throttled and ">gpu000<" not in throttled
    assert "llama-70b" in throttled  # the job running on that node
    assert "39" in throttled  # 1200 MHz is 39 % below 1980
