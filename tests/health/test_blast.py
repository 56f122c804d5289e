"""Blast radius (docs/checks.md, Blast radius): failing nodes that share a switch, PDU or NVLink
domain — at least 3 of them and at least half its nodes — are one incident for the component, not
one per node; the drain cap still holds; the next run updates it."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.cache import cache
from django.utils import timezone

from apps.fleet.models import GPU, Node
from apps.fleet.services import NodeSpec, nodes_register
from apps.health import blast
from apps.health.detectors import NodeSeen, heartbeat
from apps.health.detectors.findings import Outcome, failed, node_target
from apps.health.limits import Limits
from apps.health.services import runs_execute_now
from apps.incidents.choices import Category
from apps.incidents.models import Incident
from tests.health.conftest import backdate
from tests.support import topology_components

# --- the pure grouping -----------------------------------------------------------------

SILENT = Outcome(Category.NODE_UNREACHABLE)


def _fail(host: str):  # noqa: ANN202
    return failed("heartbeat", node_target(host), "silent", outcome=SILENT, node=host)


def _switches(**sizes: int) -> dict[str, blast.Place]:
    """leaf-a=12 → nodes leaf-a-00 … leaf-a-11 behind switch leaf-a."""
    return {
        f"{name}-{i:02d}": blast.Place(switch=name) for name, n in sizes.items() for i in range(n)
    }


def test_twelve_of_twelve_is_one_component():
    places = _switches(leafa=12, leafb=8)
    found = blast.groups([_fail(f"leafa-{i:02d}") for i in range(12)], places)
    (group,) = found
    assert group.component.key == "switch:leafa"
    assert group.component.category == Category.NETWORK_SWITCH_CABLE
    assert len(group.component.nodes) == 12 and group.component.size == 12
    assert len(group.findings) == 12


@pytest.mark.parametrize(
    ("size", "failing", "grouped"),
    [(2, 2, False), (10, 3, False), (6, 3, True), (10, 5, True), (3, 3, True), (8, 3, False)],
)
def test_at_least_three_and_at_least_half(size, failing, grouped):
    places = _switches(leafa=size)
    found = blast.groups([_fail(f"leafa-{i:02d}") for i in range(failing)], places)
    assert bool(found) is grouped


def test_warnings_and_nodes_without_place_are_not_grouped():
    places = {"a": blast.Place(pdu="p"), "b": blast.Place(pdu="p"), "c": blast.Place(pdu="p")}
    warn = [_fail("a"), _fail("b")]
    assert blast.groups(warn, places) == []  # 2 only
    assert blast.groups([*warn, _fail("d")], places) == []  # d sits nowhere known


def test_a_node_is_in_one_component_the_one_with_most_failing_first():
    # six nodes on switch s; four of them on PDU p (of 4); all six fail: the switch claims
    # all six, the PDU is left with none.
    places = {f"n{i}": blast.Place(switch="s", pdu="p" if i < 4 else "q") for i in range(6)}
    places.update({f"m{i}": blast.Place(pdu="q") for i in range(4)})
    found = blast.groups([_fail(f"n{i}") for i in range(6)], places)
    assert [g.component.key for g in found] == ["switch:s"]
    # a tie between switch and PDU goes to the switch
    places = {f"n{i}": blast.Place(switch="s", pdu="p", nvlink_domain="d") for i in range(4)}
    found = blast.groups([_fail(f"n{i}") for i in range(4)], places)
    assert [g.component.key for g in found] == ["switch:s"]


def test_categories_of_the_components():
    assert blast.CATEGORY == {
        "switch": Category.NETWORK_SWITCH_CABLE,
        "pdu": Category.POWER_SUPPLY,
        "nvlink_domain": Category.GPU,
        "storage": Category.STORAGE,
    }
    assert blast.split_key("nvlink_domain:nvl-2") == ("nvlink_domain", "nvl-2")
    assert blast.split_key("storage:nas01:/export/ckpt") == ("storage", "nas01:/export/ckpt")
    assert "storage" in blast.SPARES_NODES and not set(blast.KINDS) & blast.SPARES_NODES
    assert blast.split_key("rack:r1") is None


def test_silent_nodes_behind_one_switch_are_not_the_monitoring_path():
    now = timezone.now()
    old = now - dt.timedelta(hours=1)
    places = _switches(leafa=12)
    nodes = [NodeSeen(f"leafa-{i:02d}", "healthy", old) for i in range(12)]
    nodes += [NodeSeen(f"x{i:02d}", "healthy", now) for i in range(28)]
    out = heartbeat(nodes, now=now, limits=Limits(), cluster="c1", places=places)
    assert sorted(f.target for f in out if f.status == "fail") == [
        node_target(f"leafa-{i:02d}") for i in range(12)
    ]
    # without topology it is the monitoring path
    out = heartbeat(nodes, now=now, limits=Limits(), cluster="c1")
    assert [f.target for f in out if f.status == "fail"] == ["cluster:c1"]
    # more than half the cluster silent is the path, whatever the topology says
    nodes = [NodeSeen(f"leafa-{i:02d}", "healthy", old) for i in range(12)]
    nodes += [NodeSeen(f"x{i:02d}", "healthy", now) for i in range(8)]
    out = heartbeat(nodes, now=now, limits=Limits(), cluster="c1", places=places)
    assert [f.target for f in out if f.status == "fail"] == ["cluster:c1"]


# --- through a check run -------------------------------------------------------------


@pytest.fixture
def racks(cluster):  # noqa: ANN001, ANN201
    """40 nodes, all heard from now: h00–h11 behind switch leaf-07, h12–h21 behind leaf-08,
    h22–h23 behind leaf-09; h24–h29 on PDU pdu-3; h30–h33 in NVLink domain nvl-1."""
    start = timezone.now() - dt.timedelta(days=10)

    def place(i: int) -> dict[str, str]:
        if i < 12:
            return {"switch": "leaf-07"}
        if i < 22:
            return {"switch": "leaf-08"}
        if i < 24:
            return {"switch": "leaf-09"}
        if i < 30:
            return {"pdu": "pdu-3"}
        if i < 34:
            return {"nvlink_domain": "nvl-1"}
        return {}

    nodes = nodes_register(
        cluster=cluster,
        specs=[NodeSpec(hostname=f"h{i:02d}", in_service_at=start, **place(i)) for i in range(40)],
    )
    Node.objects.update(last_seen_at=timezone.now())
    return nodes


def run(cluster):  # noqa: ANN001, ANN201
    (done,) = runs_execute_now(cluster=cluster, kinds=["heartbeat"], requested_by="test")
    assert done.status == "done", done.error
    return done


pytestmark_db = pytest.mark.django_db


@pytestmark_db
def test_a_dead_leaf_switch_is_one_incident_naming_it_and_its_nodes(cluster, racks, api):
    hosts = [f"h{i:02d}" for i in range(12)]
    for host in hosts:
        backdate(host, 900)
    first = run(cluster)
    incident = Incident.objects.get()
    assert incident.category == "network_switch_cable"
    assert incident.details["component"] == "switch:leaf-07"
    assert "leaf-07" in incident.title
    assert sorted(n.hostname for n in incident.nodes.all()) == hosts
    assert first.counts["incidents_opened"] == 1
    # the drain cap (2% of 40 nodes an hour: 1) still limits the state changes
    assert first.counts["nodes_changed"] == 1
    assert Node.objects.filter(state="down").count() == 1
    answer = api("mia").get(f"/api/v1/incidents/{incident.pk}/").data
    assert answer["component"] == "switch:leaf-07"
    # the next run updates it: no second incident, no more drains
    again = run(cluster)
    assert Incident.objects.count() == 1 and again.counts["incidents_opened"] == 0
    assert Node.objects.filter(state="down").count() == 1
    assert Incident.objects.get().nodes.count() == 12


@pytestmark_db
def test_two_nodes_on_a_switch_are_one_incident_each(cluster, racks):
    for host in ("h22", "h23"):
        backdate(host, 900)
    run(cluster)
    incidents = Incident.objects.all()
    assert len(incidents) == 2
    assert {i.category for i in incidents} == {"node_unreachable"}
    assert all(not i.details.get("component") for i in incidents)


@pytestmark_db
def test_three_of_ten_is_not_the_switch(cluster, racks):
    for host in ("h12", "h13", "h14"):
        backdate(host, 900)
    run(cluster)
    assert Incident.objects.count() == 3
    assert set(Incident.objects.values_list("category", flat=True)) == {"node_unreachable"}


@pytestmark_db
@pytest.mark.parametrize(
    ("hosts", "component", "category"),
    [
        (["h24", "h25", "h26", "h27"], "pdu:pdu-3", "power_supply"),
        (["h30", "h31", "h32"], "nvlink_domain:nvl-1", "gpu"),
    ],
)
def test_pdu_and_nvlink_domain(cluster, racks, hosts, component, category):
    for host in hosts:
        backdate(host, 900)
    run(cluster)
    incident = Incident.objects.get()
    assert (incident.details["component"], incident.category) == (component, category)
    assert sorted(n.hostname for n in incident.nodes.all()) == hosts


@pytestmark_db
def test_a_node_that_fails_later_joins_the_component_incident(cluster, racks):
    for host in ("h00", "h01", "h02", "h03", "h04", "h05"):
        backdate(host, 900)
    run(cluster)
    backdate("h06", 900)
    run(cluster)
    incident = Incident.objects.get()
    assert incident.nodes.filter(hostname="h06").exists()


# --- the topology page -------------------------------------------------------------------


@pytestmark_db
def test_topology_page_puts_the_failing_switch_first_and_links_it(cluster, racks, client, users):
    for host in [f"h{i:02d}" for i in range(12)]:
        backdate(host, 900)
    run(cluster)
    incident = Incident.objects.get()
    client.force_login(users["mia"])
    page = client.get("/topology/?cluster=c1").content.decode()
    components = list(topology_components(page))
    first = next(i for i, key in enumerate(components) if key.startswith("switch:"))
    assert components[first] == "switch:leaf-07"
    assert f"#{incident.pk}" in page
    assert components.index("pdu:pdu-3") > first
    assert "nvlink_domain:nvl-1" in components
    assert "NVLink domains" in page  # no GPU says its vendor: NVIDIA's word
    # An AMD cluster's GPU-link domains are XGMI's; a mixed one names both.
    node = Node.objects.get(hostname="h30")
    GPU.objects.filter(node__cluster=cluster).delete()
    GPU.objects.create(node=node, index=0, vendor="amd", model="MI300X")
    # Each process remembers a cluster's GPU models for 5 minutes (docs/pages.md, Vendors
    # and models): the test moves on past that.
    cache.clear()
    assert "XGMI domains" in client.get("/topology/?cluster=c1").content.decode()
    GPU.objects.create(node=node, index=1, vendor="nvidia", model="H100")
    remembered = client.get("/topology/?cluster=c1").content.decode()
    assert "XGMI domains" in remembered and "NVLink / XGMI" not in remembered
    cache.clear()
    assert "NVLink / XGMI domains" in client.get("/topology/?cluster=c1").content.decode()
    highlighted = client.get("/topology/?cluster=c1&component=switch:leaf-08").content.decode()
    assert 'data-component="switch:leaf-08" aria-current="true"' in highlighted
    node = client.get("/nodes/h00/").content.decode()
    assert "component=switch:leaf-07" in node
    detail = client.get(f"/incidents/{incident.pk}/").content.decode()
    assert "component=switch%3Aleaf-07" in detail and "12 of its 12 nodes" in detail
    assert "node-topology" not in client.get("/nodes/").content.decode()
    assert "/topology/" in client.get("/nodes/").content.decode()


@pytestmark_db
def test_topology_page_without_topology(cluster, client, users):
    client.force_login(users["mia"])
    assert "No node of c1" in client.get("/topology/").content.decode()
    assert client.get("/topology/?cluster=nope").status_code == 404
