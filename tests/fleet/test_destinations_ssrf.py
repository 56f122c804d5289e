"""Issue 32, item 3 (SSRF): one destination rule (apps/fleet/destinations.py,
docs/operations.md, Pull-mode destinations) for the three URLs KUAE fetches that someone
typed — a node's `exporter_url`, a cluster's `prometheus_url` and its slurmrestd `url` —
and, when fetching, a connection to the very address that was checked."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.utils import timezone

from apps.fleet import destinations
from apps.fleet.models import Cluster, Node
from apps.telemetry.prometheus_source import SourceDown, instant_query
from tests.support import LoopbackServer, QuietHandler, reply

pytestmark = pytest.mark.django_db
CLUSTER = "/api/v1/clusters/c1/"

REFUSED = [
    "http://169.254.169.254/latest/meta-data/",
    "http://[fe80::1]/",
    "http://[::127.0.0.1]/",  # IPv4-compatible loopback
    "http://[::169.254.169.254]/",
    "http://[::ffff:169.254.169.254]/",
    "http://[::ffff:0:7f00:1]/",  # IPv4-translated loopback
    "http://192.0.0.192/",  # IANA special-purpose 192.0.0.0/24
    "http://198.18.0.5/",
    "http://[2001:db8::1]/",
    "http://0.0.0.0/",
]


@pytest.fixture
def no_allow(settings: Any) -> None:
    settings.KUAE_SCRAPE_ALLOW = []  # production's default


@pytest.mark.parametrize("url", REFUSED)
def test_exporter_url_refuses_special_addresses(no_allow, api, cluster, url):
    body = {"hostname": "gpu-a017", "cluster": "c1", "exporter_url": url}
    response = api("otto").post("/api/v1/nodes/", body, format="json")
    assert response.status_code == 400, response.json()
    assert list(response.json()) == ["exporter_url"]
    assert not Node.objects.exists()


@pytest.mark.parametrize("url", REFUSED)
def test_prometheus_url_refuses_them_alike(no_allow, api, cluster, url):
    response = api("root").patch(CLUSTER, {"prometheus_url": url}, format="json")
    assert response.status_code == 400
    assert "prometheus_url" in response.json()
    assert Cluster.objects.get().prometheus_url == ""


@pytest.mark.parametrize(
    "url", [*REFUSED, "unix:/var/run/docker.sock", "unix:/run/../var/run/docker.sock"]
)
def test_the_slurmrestd_url_refuses_them_and_foreign_sockets(no_allow, api, cluster, url):
    body = {"slurm": {"mode": "rest", "url": url}}
    response = api("root").patch(CLUSTER, body, format="json")
    assert response.status_code == 400, response.json()
    assert "url" in str(response.json()) and "slurm" in str(response.json())
    assert Cluster.objects.get().slurm_url == ""


@pytest.mark.parametrize(
    "url",
    [
        "http://10.20.1.5:9090",  # a site's own Prometheus on a private address
        "http://192.168.4.2:9090",
        "http://[fd12::5]:9090",
        "http://[::ffff:10.0.0.7]:9090",
    ],
)
def test_a_sites_private_addresses_stay_allowed(no_allow, api, cluster, url):
    response = api("root").patch(CLUSTER, {"prometheus_url": url}, format="json")
    assert response.status_code == 200, response.json()
    rest = api("root").patch(CLUSTER, {"slurm": {"mode": "rest", "url": url}}, format="json")
    assert rest.status_code == 200, rest.json()
    sock = {"slurm": {"mode": "rest", "url": "unix:/run/slurmrestd/slurmrestd.sock"}}
    assert api("root").patch(CLUSTER, sock, format="json").status_code == 200


class _Prometheus(LoopbackServer):
    """A loopback server answering a vector, recording each request's Host header."""

    def __init__(self) -> None:
        self.hosts: list[str] = []
        owner = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                owner.hosts.append(self.headers.get("Host", ""))
                reply(self, 200, b'{"status":"success","data":{"resultType":"vector","result":[]}}')

        super().__init__(Handler)


@pytest.fixture
def prometheus() -> Iterator[_Prometheus]:
    server = _Prometheus()
    yield server
    server.close()


@pytest.fixture
def rebinding(monkeypatch: pytest.MonkeyPatch) -> Callable[[str, list[str]], list[str]]:
    """`rebinding(name, answers)`: the resolver (the one external part) answers `name` with
    each address of `answers` in turn, then the last; returns the log of lookups."""
    real = socket.getaddrinfo
    asked: list[str] = []

    def install(name: str, answers: list[str]) -> list[str]:
        def fake(host: str, port: int, *args: object, **kwargs: object) -> list:
            if host != name:
                return real(host, port, *args, **kwargs)  # type: ignore[arg-type]
            asked.append(host)
            address = answers[min(len(asked), len(answers)) - 1]
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

        monkeypatch.setattr(socket, "getaddrinfo", fake)
        return asked

    return install


def test_the_prometheus_query_connects_to_the_address_it_checked(settings, prometheus, rebinding):
    """The name is resolved once, judged, and connected to at that address with the URL's
    host as the Host header; a second answer (a rebind to the metadata service) is never
    asked for, so it cannot redirect the query."""
    settings.KUAE_SCRAPE_ALLOW = ["127.0.0.0/8"]
    asked = rebinding("prom.site.example", ["127.0.0.1", "169.254.169.254"])
    url = f"http://prom.site.example:{prometheus.port}"
    assert instant_query(url, "x", at=timezone.now(), timeout_s=2) == []
    assert asked == ["prom.site.example"]  # one lookup per query
    assert prometheus.hosts == [f"prom.site.example:{prometheus.port}"]
    # The next query's single lookup answers the metadata service: refused, not fetched.
    with pytest.raises(SourceDown, match="169.254.169.254 is a link-local address"):
        instant_query(url, "x", at=timezone.now(), timeout_s=2)
    assert len(prometheus.hosts) == 1


def test_the_policy_judges_the_carried_ipv4_and_keeps_site_networks():
    def refused(address: str) -> bool:
        return destinations.refusal(destinations.ipaddress.ip_address(address), ()) is not None

    for address in ("::7f00:1", "::a9fe:a9fe", "192.0.0.192", "192.0.2.1", "2001::1", "fec0::1"):
        assert refused(address), address
    for address in ("10.1.2.3", "172.16.0.9", "192.168.0.1", "fd00::1", "::ffff:10.0.0.1"):
        assert not refused(address), address


def test_slurmrestd_never_gets_the_jwt_at_a_refused_or_rebound_address(settings, rebinding):
    """A stored row from before the rule, or a name that rebinds to the metadata service:
    SchedulerUnavailable saying it was refused, and no request was sent."""
    from apps.scheduler.connection import SchedulerUnavailable
    from apps.scheduler.slurm_rest import SlurmRest

    settings.KUAE_SCRAPE_ALLOW = ["127.0.0.0/8"]
    for url in ("unix:/var/run/docker.sock", "http://169.254.169.254/"):
        with pytest.raises(SchedulerUnavailable, match="refused"):
            SlurmRest(url=url, token="jwt", timeout_s=2).nodes()
    rebinding("slurm.site.example", ["169.254.169.254"])
    with pytest.raises(SchedulerUnavailable, match="refused"):
        SlurmRest(url="http://slurm.site.example:6820", token="jwt", timeout_s=2).nodes()
