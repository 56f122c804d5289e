"""The scraper against a hostile node (issue 16, item 3): where it may connect, how long and
how much it reads, and what its errors say. Each test is an attack that worked before."""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import override_settings

from apps.fleet import destinations
from apps.fleet.models import Node
from apps.fleet.services import NodeSpec, nodes_register
from apps.telemetry.services import scrape_nodes
from apps.telemetry.services.scrape import MAX_BYTES
from tests.support import SECRET, ExporterServer

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
NO_ALLOW = override_settings(KUAE_SCRAPE_ALLOW=[])  # the default: nothing listed


@pytest.fixture
def server() -> Iterator[ExporterServer]:
    exporter = ExporterServer()
    yield exporter
    exporter.close()


@pytest.fixture
def resolve_to(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    """`resolve_to({"name": ["127.0.0.1"]})`: what the resolver answers for those names."""

    real = socket.getaddrinfo

    def install(answers: dict[str, list[str]]) -> None:
        def fake(host: str, port: int, *args: object, **kwargs: object) -> list:
            if host not in answers:
                return real(host, port, *args, **kwargs)  # type: ignore[arg-type]
            return [
                (
                    socket.AF_INET6 if ":" in a else socket.AF_INET,
                    socket.SOCK_STREAM,
                    6,
                    "",
                    (a, port),
                )
                for a in answers[host]
            ]

        monkeypatch.setattr(destinations.socket, "getaddrinfo", fake)

    return install


def _scrape(cluster, url: str, timeout_s: float = 5.0) -> tuple[Node, dict[str, int], float]:  # noqa: ANN001
    """Register a node with `url` (the service does not judge it, as an old row would not
    have been) and scrape it once."""
    node = nodes_register(cluster=cluster, specs=[NodeSpec(hostname="n1", exporter_url=url)])[0]
    start = time.monotonic()
    result = scrape_nodes(node_ids=[node.pk], timeout_s=timeout_s)
    node.refresh_from_db()
    return node, result, time.monotonic() - start


# --- where it may connect -----------------------------------------------------------------

FORBIDDEN = [
    "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
    "http://127.0.0.1:5432/",
    "http://[::1]:9400/metrics",
    "http://[::ffff:169.254.169.254]/latest/meta-data/",
    "http://0.0.0.0:5432/",
    "http://localhost:9400/metrics",
]


@NO_ALLOW
@pytest.mark.parametrize("url", FORBIDDEN)
def test_registering_a_forbidden_exporter_url_is_400(api, cluster, url):
    body = {"hostname": "gpu-a017", "cluster": "c1", "exporter_url": url}
    response = api("otto").post("/api/v1/nodes/", body, format="json")
    assert response.status_code == 400, response.json()
    assert "exporter_url" in response.json()
    assert not Node.objects.exists()


@NO_ALLOW
def test_a_name_that_resolves_to_loopback_is_refused_at_registration(api, cluster, resolve_to):
    resolve_to({"exporter.evil.example": ["10.1.2.3", "127.0.0.1"]})
    body = {
        "hostname": "gpu-a017",
        "cluster": "c1",
        "exporter_url": "http://exporter.evil.example:5432/",
    }
    response = api("otto").post("/api/v1/nodes/", body, format="json")
    assert response.status_code == 400 and "exporter_url" in response.json()
    assert "127.0.0.1" in response.json()["exporter_url"][0]


@NO_ALLOW
def test_the_admin_form_judges_exporter_url_the_same_way():
    from django import forms

    from apps.fleet.admin import NodeForm

    form = NodeForm()
    form.cleaned_data = {"exporter_url": FORBIDDEN[0]}
    with pytest.raises(forms.ValidationError, match="link-local"):
        form.clean_exporter_url()
    form.cleaned_data = {"exporter_url": "http://10.20.1.5:9400/metrics"}
    assert form.clean_exporter_url() == "http://10.20.1.5:9400/metrics"


def test_listing_loopback_does_not_open_link_local_or_ipv6_loopback(api, cluster):
    # The tests list 127.0.0.0/8 (settings_test); that opens exactly that range.
    for url in (FORBIDDEN[0], FORBIDDEN[2], FORBIDDEN[3]):
        body = {"hostname": "gpu-a017", "cluster": "c1", "exporter_url": url}
        assert api("otto").post("/api/v1/nodes/", body, format="json").status_code == 400
    ok = {"hostname": "gpu-a017", "cluster": "c1", "exporter_url": "http://127.0.0.1:9400/m"}
    assert api("otto").post("/api/v1/nodes/", ok, format="json").status_code == 201


def test_the_policy():
    allow_all = destinations.parse_allow(("0.0.0.0/0", "::/0"))
    nodes_only = destinations.parse_allow(("10.20.0.0/16",))
    with_metadata = destinations.parse_allow(("169.254.169.254/32",))

    def refused(address: str, allow: tuple) -> bool:
        return destinations.refusal(ipaddress.ip_address(address), allow) is not None

    for address in (
        "127.0.0.1",
        "::1",
        "169.254.169.254",
        "fe80::1",
        "fd00:ec2::254",
        "0.0.0.0",
        "224.0.0.1",
        "255.255.255.255",
        "::ffff:127.0.0.1",
        "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
        "2002:7f00:1::",  # 6to4 of 127.0.0.1
    ):
        assert refused(address, ()), address
        assert refused(address, allow_all), address  # a wide entry does not open them
    assert not refused("10.20.1.5", ()) and not refused("10.20.1.5", nodes_only)
    assert refused("10.30.0.5", nodes_only)  # e.g. the database's subnet
    assert not refused("169.254.169.254", with_metadata)
    assert refused("169.254.169.253", with_metadata)


@NO_ALLOW
@pytest.mark.parametrize("path", ["/metrics", "/drip"])
def test_a_loopback_exporter_is_refused_at_scrape_time_and_never_fetched(cluster, server, path):
    node, result, took = _scrape(cluster, f"{server.url}{path}")
    assert result["up"] == 0 and node.scrape_ok is False
    assert node.scrape_error.startswith("refused: 127.0.0.1 is a loopback address")
    assert server.server.hits == [] and took < 1


@NO_ALLOW
def test_metadata_service_is_refused_at_scrape_time(cluster):
    node, _, took = _scrape(cluster, "http://169.254.169.254/latest/meta-data/")
    assert node.scrape_error.startswith("refused: 169.254.169.254 is a link-local address")
    assert took < 1  # not even a connection attempt


@NO_ALLOW
def test_dns_rebinding_is_refused_at_scrape_time(cluster, server, resolve_to):
    # Registered while the name pointed elsewhere; now it answers loopback.
    resolve_to({"exporter.evil.example": ["127.0.0.1"]})
    node, _, _ = _scrape(cluster, f"http://exporter.evil.example:{server.port}/metrics")
    assert node.scrape_error == (
        "refused: exporter.evil.example: 127.0.0.1 is a loopback address, "
        "not listed in KUAE_SCRAPE_ALLOW"
    )
    assert server.server.hits == []


def test_a_name_is_connected_to_at_the_address_checked(cluster, server, resolve_to):
    # Listed (127.0.0.0/8): the scraper resolves the name itself and connects there.
    resolve_to({"exporter.node.example": ["127.0.0.1"]})
    node, result, _ = _scrape(cluster, f"http://exporter.node.example:{server.port}/metrics")
    assert (node.scrape_ok, node.scrape_error, result["samples"]) == (True, "", 8)
    # One address out of bounds among good ones: the name is refused whole.
    resolve_to({"exporter.node.example": ["127.0.0.1", "169.254.169.254"]})
    scrape_nodes(node_ids=[node.pk])
    node.refresh_from_db()
    assert node.scrape_error.startswith("refused: exporter.node.example: 169.254.169.254")
    assert server.server.hits == ["/metrics"]


# --- how long and how much ----------------------------------------------------------------


def test_a_drip_fed_answer_ends_at_the_whole_scrape_deadline(cluster, server):
    nodes = nodes_register(
        cluster=cluster,
        specs=[
            NodeSpec(hostname="drip", exporter_url=f"{server.url}/drip"),
            NodeSpec(hostname="gpu-a017", exporter_url=f"{server.url}/metrics"),
        ],
    )
    start = time.monotonic()
    result = scrape_nodes(node_ids=[n.pk for n in nodes], timeout_s=2.0)
    took = time.monotonic() - start
    assert took < 3.5, took  # one byte a second never reset a per-read timeout
    assert result == {
        "targets": 2,
        "up": 1,
        "samples": 8,
        "ports": 0,
        "host": 0,
    }  # the others are scraped meanwhile
    assert Node.objects.get(hostname="drip").scrape_error == "timeout"


def test_a_slow_name_lookup_ends_at_the_deadline_too(cluster, server, monkeypatch):
    real = socket.getaddrinfo

    def slow(host: str, *args: object, **kwargs: object) -> list:
        if host == "slow.dns.example":
            time.sleep(3)
            return real("127.0.0.1", *args, **kwargs)  # type: ignore[arg-type]
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(destinations.socket, "getaddrinfo", slow)
    node, _, took = _scrape(cluster, f"http://slow.dns.example:{server.port}/metrics", 1.0)
    assert node.scrape_error == "timeout" and took < 2, took


def test_a_gzip_bomb_is_refused_at_the_cap_with_memory_flat(cluster, server):
    from tests.support import gzip_bomb

    gzip_bomb()  # built before measuring
    tracemalloc.start()
    try:
        node, _, _ = _scrape(cluster, f"{server.url}/bomb")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert node.scrape_error == f"answer over {MAX_BYTES} bytes"
    assert peak < 3 * MAX_BYTES, peak / 2**20  # 100 MiB inflated would be far above


@pytest.mark.parametrize("path", ["/huge", "/endless"])
def test_a_400_mib_answer_is_cut_at_the_cap_without_reading_it(cluster, server, path):
    tracemalloc.start()
    try:
        node, _, took = _scrape(cluster, f"{server.url}{path}")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert node.scrape_error == f"answer over {MAX_BYTES} bytes"
    time.sleep(0.2)  # the server notices the hang-up
    assert server.server.sent < 64 * 2**20, server.server.sent  # not 400 MiB
    assert peak < 3 * MAX_BYTES and took < 5


# --- what the error says ------------------------------------------------------------------


def _banner_server() -> tuple[int, threading.Thread]:
    """A TCP service that is not HTTP: it says its banner (with a secret) and hangs up."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def serve() -> None:
        conn, _ = listener.accept()
        conn.sendall(b"SSH-2.0-OpenSSH_9.6 " + SECRET + b"\r\n")
        conn.close()
        listener.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return listener.getsockname()[1], thread


@pytest.mark.parametrize(
    ("path", "said"),
    [("/leak", "bad exposition text at line 1"), ("/leak500", "HTTP 500"), (None, None)],
)
def test_a_scrape_error_never_echoes_the_answer(cluster, server, path, said):
    if path is None:
        port, thread = _banner_server()
        url, said = f"http://127.0.0.1:{port}/metrics", "not an HTTP answer"
    else:
        url = f"{server.url}{path}"
    node, _, _ = _scrape(cluster, url)
    assert node.scrape_error == said
    for secret in (b"root:x", b"hunter2", b"bash", b"SSH-2.0"):
        assert secret.decode() not in node.scrape_error


# --- its own queue ------------------------------------------------------------------------


def test_scrapes_run_on_their_own_queue_which_the_embedded_worker_consumes(settings):
    from kuaeweb.celery import app

    route = app.amqp.router.route
    for task in ("apps.telemetry.tasks.scrape_round", "apps.telemetry.tasks.scrape_chunk"):
        assert route({}, task)["queue"].name == settings.KUAE_SCRAPE_QUEUE == "scrape"
    for task in ("apps.health.tasks.health_tick", "apps.incidents.tasks.delivery_send_task"):
        assert route({}, task)["queue"].name == settings.CELERY_TASK_DEFAULT_QUEUE
    worker = next(
        line for line in (ROOT / "Procfile").read_text().splitlines() if line.startswith("worker")
    )
    queues = worker.split(" -Q ")[1].split()[0].split(",")
    assert set(queues) == {settings.CELERY_TASK_DEFAULT_QUEUE, settings.KUAE_SCRAPE_QUEUE}
