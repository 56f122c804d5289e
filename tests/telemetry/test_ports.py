"""NIC ports through the telemetry intake (`ports` beside `samples`): stored once, newest
reading kept with the previous one's counters, bounded, scoped; shown on the node page."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.accounts.choices import Role
from apps.accounts.services import token_issue, user_create_or_update
from apps.fleet.services import agent_scope_set
from apps.telemetry.models import Port, PortRollup
from apps.telemetry.ports import counter_growth, phys_state_normal, rate_normal, state_normal

pytestmark = pytest.mark.django_db

URL = "/api/v1/ingest/telemetry/"


def iso(t: dt.datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


T0 = timezone.now().replace(microsecond=0) - dt.timedelta(minutes=10)


def reading(node: str, device: str = "mlx5_0", port: int = 1, at: dt.datetime = T0, **metrics):  # noqa: ANN003, ANN201
    metrics = metrics or {"state": "4: ACTIVE", "phys_state": "5: LinkUp", "link_downed": 0}
    return {"node": node, "device": device, "port": port, "ts": iso(at), "metrics": metrics}


def post(client, **body):  # noqa: ANN001, ANN003, ANN201
    return client.post(URL, body, format="json")


@pytest.fixture
def ada(api):  # noqa: ANN001, ANN201
    return api("ada")


def test_the_normal_forms_of_states_and_rates():
    assert state_normal("4: ACTIVE") == state_normal("active") == state_normal(4) == "ACTIVE"
    assert state_normal("1: DOWN") == "DOWN" and state_normal(" ARMED ") == "ARMED"
    assert phys_state_normal("5: LinkUp") == phys_state_normal("linkup") == "LinkUp"
    assert phys_state_normal(3) == "Disabled"
    # the kernel writes phys_state 7 with a space (drivers/infiniband/core/sysfs.c)
    assert phys_state_normal("7: Phy Test") == phys_state_normal("PhyTest") == "PhyTest"
    assert rate_normal("200 Gb/sec (4X HDR)") == 200.0 and rate_normal(400) == 400.0
    # A state the kernel reports that the old table lacked, and any other, by its name.
    assert state_normal("5: ACTIVE_DEFER") == state_normal(5) == "ACTIVE_DEFER"
    assert state_normal("6: FUTURE_STATE") == "FUTURE_STATE" and state_normal(9) == "UNKNOWN_9"
    assert state_normal("x" * 100) == "x" * 32 and phys_state_normal("0: <unknown>") == "<unknown>"
    for bad in (True, "", "  ", -1, 2**40, 1.5, None, ["ACTIVE"]):
        with pytest.raises(ValueError, match="DOWN, INIT, ARMED, ACTIVE"):
            state_normal(bad)


def test_ports_are_stored_beside_samples(ada, nodes):
    first = reading("gpu000", state="ACTIVE", phys_state="LinkUp", rate_gbps="400 Gb/sec (4X NDR)",
                    link_downed=0, symbol_error=3, vendor_extra=1.5)  # fmt: skip
    first.update(switch="leaf-07", switch_port=17)
    sample = {"node": "gpu000", "gpu": 0, "ts": iso(T0), "metrics": {"temp_c": 50}}
    response = post(ada, samples=[sample], ports=[first, reading("gpu000", "mlx5_1")])
    assert response.status_code == 202, response.content
    assert response.json() == {
        "accepted": 1, "applied": 1, "stale": 0, "events": 0, "ports": 2, "ports_stale": 0,
        "host": 0, "host_stale": 0, "host_skipped": 0,
    }  # fmt: skip
    port = Port.objects.get(node__hostname="gpu000", device="mlx5_0", port=1)
    assert (port.state, port.phys_state, port.rate_gbps) == ("ACTIVE", "LinkUp", 400.0)
    assert (port.switch, port.switch_port, port.ts) == ("leaf-07", "17", T0)
    assert port.counters == {"link_downed": 0, "symbol_error": 3, "vendor_extra": 1.5}
    assert port.prev_counters == {} and port.prev_ts is None
    other = Port.objects.get(device="mlx5_1")
    assert (other.state, other.phys_state) == ("ACTIVE", "LinkUp")  # sysfs's "4: ACTIVE"
    # Ports alone, no samples: a later reading keeps the previous one's counters.
    later = reading("gpu000", at=T0 + dt.timedelta(minutes=1), state="DOWN", symbol_error=9)
    assert post(ada, ports=[later]).json()["ports"] == 1
    port.refresh_from_db()
    assert port.state == "DOWN" and port.rate_gbps == 400.0 and port.switch == "leaf-07"
    assert port.counters == {"symbol_error": 9} and port.prev_counters["symbol_error"] == 3
    assert port.prev_ts == T0 and port.ts == T0 + dt.timedelta(minutes=1)


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"device": "mlx5 0"}, "ports[1].device"),
        ({"port": -1}, "ports[1].port"),
        ({"port": "one"}, "ports[1].port"),
        ({"ts": "yesterday"}, "ports[1].ts"),
        ({"node": None}, "ports[1].node"),
        ({"metrics": {"link_downed": -1}}, "ports[1].metrics.link_downed"),
        ({"metrics": {"symbol_error": 1.5}}, "ports[1].metrics.symbol_error"),
        ({"metrics": {"symbol_error": "3"}}, "ports[1].metrics.symbol_error"),
        ({"metrics": {"port_xmit_wait": 2**64}}, "ports[1].metrics.port_xmit_wait"),
        ({"metrics": {"state": True}}, "ports[1].metrics.state"),
        ({"metrics": {"state": " "}}, "ports[1].metrics.state"),
        ({"metrics": {"phys_state": -5}}, "ports[1].metrics.phys_state"),
        ({"metrics": {"rate_gbps": -5}}, "ports[1].metrics.rate_gbps"),
        ({"metrics": {"vendor_extra": True}}, "ports[1].metrics.vendor_extra"),
        ({"metrics": {}}, "ports[1].metrics"),
        ({"metrics": {f"c{i}": 1 for i in range(65)}}, "ports[1].metrics"),
        ({"switch_port": ""}, "ports[1].switch_port"),
    ],
)
def test_a_bad_reading_is_a_400_naming_it_and_nothing_is_written(ada, nodes, entry, field):
    sample = {"node": "gpu000", "gpu": 0, "ts": iso(T0), "metrics": {"temp_c": 50}}
    response = post(
        ada, samples=[sample], ports=[reading("gpu000"), {**reading("gpu001"), **entry}]
    )
    assert response.status_code == 400, response.content
    assert field in response.json()
    assert not Port.objects.exists()
    assert not nodes[0].gpus.filter(updated_at__isnull=False).exists()  # the samples neither


def test_a_state_the_kernel_adds_is_stored_by_its_name_not_active(ada, nodes):
    """`5: ACTIVE_DEFER` (and a state no table knows) was a 400 refusing every other port of
    the batch: it is stored by its name, is no ACTIVE port (a warning on its badge, counted
    in the rollup's ports not ACTIVE), and the batch's other ports are stored with it."""
    body = [
        reading("gpu000", "mlx5_0", state="5: ACTIVE_DEFER", phys_state="5: LinkUp"),
        reading("gpu000", "mlx5_1", state="4: ACTIVE", phys_state="5: LinkUp"),
        reading("gpu000", "mlx5_2", state="6: SOMETHING_NEWER", phys_state="8: Quantum"),
        reading("gpu000", "mlx5_3", state=5, link_downed=0),
    ]
    response = post(ada, ports=body)
    assert response.status_code == 202, response.content
    assert response.json()["ports"] == 4
    ports = {p.device: p for p in Port.objects.filter(node__hostname="gpu000")}
    assert [(d, p.state, p.state_tone) for d, p in sorted(ports.items())] == [
        ("mlx5_0", "ACTIVE_DEFER", "warn"),
        ("mlx5_1", "ACTIVE", "pass"),
        ("mlx5_2", "SOMETHING_NEWER", "warn"),
        ("mlx5_3", "ACTIVE_DEFER", "warn"),
    ]
    assert ports["mlx5_2"].phys_state == "Quantum"
    rollup = PortRollup.objects.get(node__hostname="gpu000")
    assert (rollup.ports, rollup.not_active) == (4, 3)
    assert Port(state="DOWN").state_tone == "fail" and Port(state="").state_tone == ""


def test_the_batch_shape(ada, nodes):
    assert "samples" in post(ada).json()
    assert "samples" in post(ada, samples=[], ports=[]).json()
    assert post(ada, ports="mlx5_0").json() == {"ports": ["must be a list"]}
    response = post(ada, ports=[reading("nobody")])
    assert response.status_code == 400
    assert "unknown node 'nobody'" in response.json()["ports[0].node"][0]


def test_the_same_batch_twice_is_applied_once_and_an_older_reading_is_ignored(ada, nodes):
    body = [
        reading("gpu002", at=T0, symbol_error=1),
        reading("gpu002", at=T0 + dt.timedelta(seconds=30), symbol_error=4),
    ]
    assert post(ada, ports=body).json()["ports"] == 2
    port = Port.objects.get()
    assert (port.counters, port.prev_counters) == ({"symbol_error": 4}, {"symbol_error": 1})
    again = post(ada, ports=body).json()
    assert (again["ports"], again["ports_stale"]) == (0, 2)
    older = post(ada, ports=[reading("gpu002", at=T0 - dt.timedelta(minutes=1), symbol_error=0)])
    assert older.json()["ports_stale"] == 1
    port.refresh_from_db()
    assert (port.counters, port.prev_counters) == ({"symbol_error": 4}, {"symbol_error": 1})
    assert port.ts == T0 + dt.timedelta(seconds=30) and port.prev_ts == T0


def test_a_counter_that_went_down_was_reset_never_negative_growth():
    grown = counter_growth(
        {"link_downed": 5, "symbol_error": 100, "port_rcv_errors": 7, "port_xmit_wait": 3},
        {"link_downed": 5, "symbol_error": 2, "port_rcv_errors": 9, "port_xmit_wait": 3},
    )
    assert [(g.name, g.growth, g.reset) for g in grown] == [
        ("symbol_error", 2, True),
        ("port_rcv_errors", 2, False),
    ]
    assert counter_growth({}, {"link_downed": 3}) == []  # no previous reading: no growth


def test_a_scoped_agent_may_not_write_another_nodes_port(cluster, nodes):
    from rest_framework.test import APIClient

    user = user_create_or_update(username="n0", role=Role.AGENT)
    agent_scope_set(user=user, cluster=cluster, hostlist="gpu000")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)}")
    assert post(client, ports=[reading("gpu000")]).status_code == 202
    refused = post(client, ports=[reading("gpu000", "mlx5_1"), reading("gpu001")])
    assert refused.status_code == 403 and "gpu001" in refused.content.decode()
    assert list(Port.objects.values_list("node__hostname", "device")) == [("gpu000", "mlx5_0")]


def test_at_most_64_ports_per_node(ada, nodes):
    many = [reading("gpu003", f"mlx5_{i // 2}", i % 2 + 1) for i in range(64)]
    assert post(ada, ports=many).json()["ports"] == 64
    one_more = post(ada, ports=[reading("gpu003", "mlx5_99", 1), reading("gpu004")])
    assert one_more.status_code == 400
    assert "64 ports per node" in one_more.json()["ports[0]"][0]
    assert Port.objects.count() == 64
    at_once = post(ada, ports=[reading("gpu005", f"mlx5_{i}") for i in range(65)])
    assert at_once.status_code == 400 and "ports[64]" in at_once.json()
    assert not Port.objects.filter(node__hostname="gpu005").exists()


@pytest.fixture
def browser(client, users):  # noqa: ANN001, ANN201
    client.force_login(users["mia"])
    return client


def test_the_node_page_shows_its_ports_and_what_grew(ada, browser, nodes):
    html = browser.get("/nodes/gpu006/").content.decode()
    assert "No fabric telemetry for this node" in html
    first = reading("gpu006", state="ACTIVE", phys_state="LinkUp", rate_gbps=400,
                    link_downed=1, symbol_error=50, port_rcv_errors=3)  # fmt: skip
    first["switch"], first["switch_port"] = "leaf-07", "17"
    later = reading("gpu006", at=T0 + dt.timedelta(minutes=1), state="4: ACTIVE",
                    link_downed=2, symbol_error=4, port_rcv_errors=3)  # fmt: skip
    down = reading("gpu006", "mlx5_1", state="DOWN", phys_state="Polling", link_downed=0)
    assert post(ada, ports=[first, later, down]).status_code == 202
    html = browser.get("/nodes/gpu006/").content.decode()
    assert "No fabric telemetry" not in html
    assert "mlx5_0/1" in html and "mlx5_1/1" in html
    assert "✓ ACTIVE" in html and "✗ DOWN" in html and "Polling" in html
    assert "leaf-07 port 17" in html and ">400<" in html
    assert '<span class="mono">link_downed</span> +1' in html
    assert '<span class="mono">symbol_error</span> <span class="muted">reset, now</span> 4' in html
    assert "port_rcv_errors" not in html  # did not grow
    assert "first reading" in html  # mlx5_1: no previous reading yet
    # hw_counters were not sent (as node_exporter sends none): said, never a pass
    assert "RNR NAK retries not reported</span> by any port" in html
    assert "not reported by node_exporter" in html and "not checked, rather than passing" in html
    agent = reading("gpu006", "mlx5_1", at=T0 + dt.timedelta(minutes=2), state="DOWN",
                    link_downed=0, rnr_nak_retry_err=0, local_ack_timeout_err=0)  # fmt: skip
    assert post(ada, ports=[agent]).status_code == 202
    html = browser.get("/nodes/gpu006/").content.decode()
    assert "RNR NAK retries not reported</span> by mlx5_0/1:" in html
