"""A cluster's Prometheus (docs/integrations.md, 2d. Prometheus): `prometheus_url` through the API,
the query and how its answer is read, and every way a server can fail to answer (SourceDown, never a
partial read). The checks against a real Prometheus: tests/health/test_prometheus_real.py."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.utils import timezone

from apps.fleet.models import Cluster
from apps.health.services import PULLED_METRICS
from apps.telemetry.exporters import series_for
from apps.telemetry.host_series import pull_name
from apps.telemetry.infiniband import PORT_METRICS
from apps.telemetry.names import COUNTERS, DCGM_FIELDS
from apps.telemetry.prometheus_source import SourceDown, instant_query, pull_asks, token_for
from apps.telemetry.promql import dcgm_query, host_index, samples_of, vector_of
from tests.support import LoopbackServer, QuietHandler, reply

URL = "/api/v1/clusters/c1/"
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def test_get_shows_and_admin_patch_sets_prometheus_url(
    api: Callable[[str | None], Any], cluster: Cluster, settings: Any
) -> None:
    assert api("mia").get(URL).json()["prometheus_url"] == ""
    settings.KUAE_SCRAPE_ALLOW = ["10.0.0.0/8"]
    body = {"prometheus_url": "http://10.1.2.3:9090"}
    assert api("otto").patch(URL, body, format="json").status_code == 403
    answer = api("root").patch(URL, body, format="json")
    assert answer.status_code == 200, answer.content
    assert answer.json()["prometheus_url"] == "http://10.1.2.3:9090"
    assert "prometheus_token" not in answer.json()
    assert api("mia").get(URL).json()["prometheus_url"] == "http://10.1.2.3:9090"
    assert api("root").patch(URL, {"prometheus_url": ""}, format="json").status_code == 200
    cluster.refresh_from_db()
    assert cluster.prometheus_url == ""


@pytest.mark.parametrize(
    "url",
    ["ftp://10.1.2.3/", "prom:9090", "http://127.0.0.1:9090", "http://169.254.169.254/"],
)
def test_patch_refuses_a_bad_or_forbidden_url(
    api: Callable[[str | None], Any], cluster: Cluster, url: str, settings: Any
) -> None:
    settings.KUAE_SCRAPE_ALLOW = []  # production's default: loopback and link-local refused
    answer = api("root").patch(URL, {"prometheus_url": url}, format="json")
    assert answer.status_code == 400
    assert "prometheus_url" in str(answer.json())


def test_loopback_allowed_when_listed(
    api: Callable[[str | None], Any], cluster: Cluster, settings: Any
) -> None:
    settings.KUAE_SCRAPE_ALLOW = ["127.0.0.0/8"]
    answer = api("root").patch(URL, {"prometheus_url": "http://127.0.0.1:9090"}, format="json")
    assert answer.status_code == 200


def test_token_from_the_cluster_else_the_environment(cluster: Cluster, settings: Any) -> None:
    settings.KUAE_PROMETHEUS_TOKEN = "from-env"
    assert token_for(cluster) == "from-env"
    cluster.prometheus_token = "own"
    assert token_for(cluster) == "own"


def test_one_query_names_every_field_with_the_identity_on_one() -> None:
    query = dcgm_query()
    identity, values = query.split(" or ")
    # One query whatever the vendors: each exporter's index label (dcgm `gpu`, AMD `gpu_id`,
    # Gaudi `id`) and identity labels, the identity asked of one series per exporter; the
    # label a mapping line selects on (AMD's gpu_clock `clock_type`) kept apart.
    by = "__name__, Hostname, hostname, gpu, gpu_id, id, clock_type"
    assert identity == (
        f"max by ({by}, UUID, modelName, pci_bus_id, gpu_uuid, card_model) "
        '({__name__=~"DCGM_FI_DEV_GPU_TEMP|gpu_power_usage|amd_gpu_power_usage|'
        'habanalabs_utilization"})'
    )
    assert values.startswith(f'max by ({by}) ({{__name__=~"')
    assert "DCGM_FI_DEV_XID_ERRORS" in values and "DCGM_FI_DEV_GPU_TEMP" not in values
    assert "gpu_ecc_uncorrect_total" in values and "amd_gpu_ecc_uncorrect_total" in values
    assert "habanalabs_power_mW" in values
    assert "Hostname=~" not in query  # never a regex of the cluster's hostnames
    # Without the identity (the fleet view), and the temperature added to a pull without it.
    assert dcgm_query(["DCGM_FI_DEV_GPU_UTIL"], identity=False) == (
        f'max by ({by}) ({{__name__=~"DCGM_FI_DEV_GPU_UTIL"}})'
    )
    assert dcgm_query(["DCGM_FI_DEV_GPU_UTIL"]).count("DCGM_FI_DEV_GPU_TEMP") == 1
    # KUAE's names to the exporters' series: both spellings of the throttle reasons.
    assert series_for({"xid", "sm_clock_throttle"}) == [
        "DCGM_FI_DEV_XID_ERRORS",
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
        "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
    ]
    assert series_for({"power_w"}) == [
        "DCGM_FI_DEV_POWER_USAGE",
        "gpu_power_usage",
        "habanalabs_power_mW",
    ]


def test_each_telemetry_check_pulls_what_it_judges_and_together_every_field() -> None:
    pulled = dict(PULLED_METRICS)
    assert set(pulled) == {
        "heartbeat",
        "gpu_errors",
        "thermal",
        "fabric",
        "host_memory",
        "host_oom",
        "storage",
        "clock",
    }  # plug-ins' `pulls`; `pcie`'s (`host:pcie`) asks nothing: node_exporter has no PCIe
    # the host checks read their host kind each (one query of node_exporter's host series)
    hosts = {kind: pulled.pop(kind) for kind in ("host_memory", "host_oom", "storage", "clock")}
    assert hosts == {
        "host_memory": {pull_name("memory")},
        "host_oom": {pull_name("vmstat")},
        "storage": {pull_name("filesystem")},
        "clock": {pull_name("clock")},
    }
    assert not pull_asks({pull_name("pcie")}) and pull_asks({pull_name("memory")})
    assert {"temp_c", "mem_temp_c"} <= pulled["thermal"]
    assert {"xid", *COUNTERS, "row_remap_failure"} <= pulled["gpu_errors"]
    # the fabric reads every port name node_exporter publishes (its own query)
    assert pulled.pop("fabric") >= PORT_METRICS
    kinds = list(pulled.values())
    assert sum(map(len, kinds)) == len(set().union(*kinds))  # no field read twice a minute
    assert set().union(*kinds) == set(DCGM_FIELDS.values())


def test_vector_of_skips_what_is_not_a_series() -> None:
    good = {"metric": {"__name__": "x", "gpu": "0"}, "value": [1, "2.5"]}
    answer = {
        "status": "success",
        "data": {
            "resultType": "vector",
            "result": [
                good,
                5,
                {"metric": [], "value": [1, "2"]},
                {"metric": {}, "value": [1]},
                {"metric": {}, "value": [1, 2]},
                {"metric": {}, "value": [1, "not a number"]},
                {"value": [1, "2"]},
            ],
        },
    }
    assert vector_of(answer) == [({"__name__": "x", "gpu": "0"}, 2.5)]


def test_samples_of_takes_the_identity_where_it_is_and_ignores_odd_labels() -> None:
    vector = [
        ({"__name__": "DCGM_FI_DEV_GPU_UTIL", "Hostname": "n1", "gpu": "0"}, 97.0),
        (
            {
                "__name__": "DCGM_FI_DEV_GPU_TEMP",
                "Hostname": "n1",
                "gpu": "0",
                "UUID": "GPU-1",
                "modelName": "H100",
                "pci_bus_id": "00000000:18:00.0",
            },
            61.0,
        ),
        ({"__name__": "DCGM_FI_DEV_GPU_UTIL", "Hostname": "n1", "gpu": "1"}, 5.0),
        ({"__name__": ["DCGM_FI_DEV_GPU_UTIL"], "Hostname": "n1", "gpu": "1"}, 5.0),
        ({"__name__": "DCGM_FI_DEV_GPU_UTIL", "Hostname": 7, "gpu": "1"}, 5.0),
        ({"__name__": "DCGM_FI_DEV_GPU_UTIL", "Hostname": ["n1"], "gpu": "1"}, 5.0),
        ({"__name__": "DCGM_FI_DEV_GPU_UTIL", "Hostname": "n1", "gpu": 1}, 5.0),
    ]
    known = {("n1", 0), ("n1", 1)}
    samples = samples_of(vector, hosts=host_index(["n1"]), known=known, ts=NOW)
    assert [(s.gpu, s.metrics, s.uuid, s.model, s.pci_bus) for s in samples] == [
        # the model under its one name (docs/pages.md, One name per model)
        (0, {"gpu_util": 97, "temp_c": 61}, "GPU-1", "NVIDIA H100 80GB HBM3", "0000:18:00.0"),
        (1, {"gpu_util": 5}, "", "", ""),  # blank: the intake keeps what it has
    ]


def test_samples_of_picks_the_cluster_gpus_and_maps_names() -> None:
    vector = [
        ({"__name__": "DCGM_FI_DEV_GPU_TEMP", "Hostname": "n1", "gpu": "0"}, 91.0),
        ({"__name__": "DCGM_FI_DEV_XID_ERRORS", "Hostname": "n1", "gpu": "0"}, 79.0),
        ({"__name__": "DCGM_FI_DEV_GPU_TEMP", "hostname": "n2.dc.example", "gpu": "1"}, 50.0),
        ({"__name__": "DCGM_FI_DEV_GPU_TEMP", "Hostname": "other", "gpu": "0"}, 99.0),
        ({"__name__": "DCGM_FI_DEV_GPU_TEMP", "Hostname": "n1", "gpu": "9"}, 99.0),
        ({"__name__": "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "Hostname": "n1", "gpu": "0"}, 9.3e18),
        ({"__name__": "DCGM_FI_DEV_POWER_USAGE", "Hostname": "n1", "gpu": "0"}, float("nan")),
        ({"__name__": "up", "Hostname": "n1", "gpu": "0"}, 1.0),
    ]
    known = {("n1", 0), ("n2", 1)}
    samples = samples_of(vector, hosts=host_index(["n1", "n2"]), known=known, ts=NOW)
    assert [(s.node, s.gpu, s.metrics) for s in samples] == [
        ("n1", 0, {"temp_c": 91, "xid": 79}),
        ("n2", 1, {"temp_c": 50}),
    ]


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ([], "not a JSON object"),
        ({"status": "error", "error": "parse error"}, "parse error"),
        ({"status": "success", "data": {"resultType": "matrix", "result": []}}, "instant vector"),
    ],
)
def test_vector_of_refuses_what_is_not_a_vector(answer: object, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        vector_of(answer)


class _Fake(LoopbackServer):
    """A loopback server answering every request with `status` and `body` (after `delay`)."""

    def __init__(self, status: int, body: bytes, delay: float = 0.0) -> None:
        self.requests: list[tuple[str, dict[str, str]]] = []
        owner = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                owner.requests.append((self.path, dict(self.headers)))
                time.sleep(delay)
                reply(self, status, body)

        super().__init__(Handler)


@pytest.fixture
def fake(request: pytest.FixtureRequest, settings: Any) -> Iterator[_Fake]:
    settings.KUAE_SCRAPE_ALLOW = ["127.0.0.0/8"]
    server = _Fake(*request.param)
    yield server
    server.close()


OK = (
    b'{"status":"success","data":{"resultType":"vector",'
    b'"result":[{"metric":{"__name__":"x"},"value":[1,"2"]}]}}'
)


@pytest.mark.parametrize("fake", [(200, OK)], indirect=True)
def test_a_good_answer_with_the_bearer_token(fake: _Fake) -> None:
    assert instant_query(fake.url, "x", at=timezone.now(), token="t0k") == [
        ({"__name__": "x"}, 2.0)
    ]
    path, headers = fake.requests[0]
    assert path == "/api/v1/query" and headers["Authorization"] == "Bearer t0k"


@pytest.mark.parametrize(
    ("fake", "said"),
    [
        ((503, b"Service Unavailable"), "HTTP 503"),
        ((500, b'{"status":"error","error":"boom"}'), "HTTP 500: boom"),
        ((200, b"<html>not json"), "not JSON"),
        ((200, b'{"status":"success","data":{"resultType":"scalar","result":[1,"2"]}}'), "vector"),
        ((200, OK * 10), "larger than 100 bytes"),
        ((200, OK, 2.0), "ReadTimeout"),
    ],
    indirect=["fake"],
)
def test_every_way_of_not_answering_is_source_down(fake: _Fake, said: str) -> None:
    with pytest.raises(SourceDown, match=said) as caught:
        instant_query(fake.url, "x", at=timezone.now(), timeout_s=0.5, max_bytes=100)
    assert fake.url in str(caught.value)


def test_connection_refused_and_a_forbidden_address(settings: Any) -> None:
    from tests.support import closed_port

    settings.KUAE_SCRAPE_ALLOW = ["127.0.0.0/8"]
    url = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(SourceDown, match="ConnectError"):
        instant_query(url, "x", at=timezone.now(), timeout_s=1)
    settings.KUAE_SCRAPE_ALLOW = []
    with pytest.raises(SourceDown, match="may not connect"):
        instant_query(url, "x", at=timezone.now(), timeout_s=1)
