"""Where nodes sit (docs/checks.md, Blast radius): switch, PDU and NVLink domain on `POST nodes/`
and the bulk `POST nodes/topology/`, all or nothing."""

from __future__ import annotations

import pytest

from apps.fleet.models import Node

URL = "/api/v1/nodes/topology/"


def test_register_with_topology_and_read_it_back(api, cluster):
    body = {
        "hostname": "gpu900",
        "cluster": "c1",
        "rack": "r9",
        "switch": "leaf-07",
        "pdu": "pdu-9a",
        "nvlink_domain": "nvl-3",
    }
    r = api("otto").post("/api/v1/nodes/", body, format="json")
    assert r.status_code == 201, r.content
    assert (r.data["switch"], r.data["pdu"], r.data["nvlink_domain"]) == (
        "leaf-07",
        "pdu-9a",
        "nvl-3",
    )
    got = api("mia").get("/api/v1/nodes/gpu900/").data
    assert (got["switch"], got["pdu"], got["nvlink_domain"]) == ("leaf-07", "pdu-9a", "nvl-3")
    listed = api("mia").get("/api/v1/nodes/?cluster=c1").data["results"][0]
    assert listed["switch"] == "leaf-07"
    # re-registering moves it to another switch
    r = api("otto").post("/api/v1/nodes/", {**body, "switch": "leaf-08"}, format="json")
    assert r.status_code == 200
    assert Node.objects.get(hostname="gpu900").switch == "leaf-08"


def test_bulk_topology_sets_clears_and_keeps(api, nodes):
    Node.objects.filter(hostname="gpu001").update(pdu="old-pdu", rack="r0")
    body = {
        "nodes": [
            {"hostname": "gpu000", "switch": "leaf-01", "pdu": "pdu-a", "nvlink_domain": "nvl-0"},
            {"hostname": "gpu001", "switch": "leaf-01", "pdu": None},
            {"hostname": "gpu002", "rack": "r7"},
        ]
    }
    r = api("otto").post(URL, body, format="json")
    assert r.status_code == 200, r.content
    assert r.data == {"nodes": 3, "changed": 3}
    got = {n.hostname: (n.rack, n.switch, n.pdu, n.nvlink_domain) for n in Node.objects.all()}
    assert got["gpu000"] == ("r0", "leaf-01", "pdu-a", "nvl-0")
    assert got["gpu001"] == ("r0", "leaf-01", "", "")  # pdu cleared, rack kept
    assert got["gpu002"] == ("r7", "", "", "")
    again = api("otto").post(URL, body, format="json")
    assert again.data == {"nodes": 3, "changed": 0}


@pytest.mark.parametrize(
    ("item", "field"),
    [
        ({"hostname": "nope"}, "nodes[1].hostname"),
        ({"hostname": "gpu001", "switch": "x" * 65}, "nodes[1].switch"),
        ({"hostname": "gpu001", "pdu": 7}, "nodes[1].pdu"),
        ({"hostname": "gpu001", "nvlink_domain": "a\nb"}, "nodes[1].nvlink_domain"),
        ({"hostname": "gpu001", "colour": "red"}, "nodes[1].colour"),
        ({"hostname": "gpu000"}, "nodes[1].hostname"),  # twice
        ({}, "nodes[1].hostname"),
        ("gpu001", "nodes[1]"),
    ],
)
def test_bad_item_is_400_naming_it_and_nothing_is_written(api, nodes, item, field):
    body = {"nodes": [{"hostname": "gpu000", "switch": "leaf-01"}, item]}
    r = api("otto").post(URL, body, format="json")
    assert r.status_code == 400
    assert field in r.data, r.data
    assert Node.objects.get(hostname="gpu000").switch == ""


@pytest.mark.parametrize("body", [{}, {"nodes": []}, {"nodes": "gpu000"}, []])
def test_bad_body_is_400(api, nodes, body):
    r = api("otto").post(URL, body, format="json")
    assert r.status_code == 400


def test_past_the_bound_is_400(api, nodes, monkeypatch):
    monkeypatch.setattr("apps.fleet.api.TOPOLOGY_NODES", 2)
    body = {"nodes": [{"hostname": f"gpu00{i}", "switch": "s"} for i in range(3)]}
    r = api("otto").post(URL, body, format="json")
    assert r.status_code == 400 and "nodes" in r.data


def test_readers_may_not_set_topology(api, nodes):
    r = api("mia").post(URL, {"nodes": [{"hostname": "gpu000", "switch": "s"}]}, format="json")
    assert r.status_code == 403


def test_many_nodes_in_one_request(api, cluster, django_assert_max_num_queries):
    from apps.fleet.services import NodeSpec, nodes_register

    nodes_register(cluster=cluster, specs=[NodeSpec(hostname=f"n{i:05d}") for i in range(3000)])
    body = {"nodes": [{"hostname": f"n{i:05d}", "switch": f"leaf-{i // 16}"} for i in range(3000)]}
    client = api("otto")
    with django_assert_max_num_queries(20):
        r = client.post(URL, body, format="json")
    assert r.status_code == 200 and r.data == {"nodes": 3000, "changed": 3000}
    assert Node.objects.filter(switch="leaf-187").count() == 8
