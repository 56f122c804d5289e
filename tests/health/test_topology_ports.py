"""The topology page's switches by their NIC ports' health (docs/checks.md, Blast radius: one
incident per failing component): each
switch counts the ports cabled to it by the `fabric` check's verdict, is marked by the worst,
and the page costs the same queries whatever the number of switches, nodes and ports."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.fleet.models import Node
from apps.fleet.services import NodeSpec, nodes_register
from apps.health.detectors.fabric import port_target
from apps.health.models import CheckResult
from apps.health.topology import topology
from apps.telemetry.models import Port
from tests.support import topology_components, topology_quiet_lines

pytestmark = pytest.mark.django_db


def _fleet(cluster, switches: int, per_switch: int = 4, ports: int = 8) -> list[Node]:  # noqa: ANN001
    """`switches` leaf switches with `per_switch` nodes each placed behind them
    (`Node.switch`), every node with `ports` ports; port 0 reports no switch of its own (it
    counts under the node's), the others name theirs."""
    nodes = nodes_register(
        cluster=cluster,
        specs=[
            NodeSpec(hostname=f"n{s:02d}-{i}", switch=f"leaf-{s:02d}")
            for s in range(switches)
            for i in range(per_switch)
        ],
    )
    Port.objects.bulk_create(
        Port(
            node=node,
            device=f"mlx5_{p}",
            port=1,
            switch="" if p == 0 else node.switch,
            state="ACTIVE",
            ts=timezone.now(),
        )
        for node in nodes
        for p in range(ports)
    )
    return nodes


def _verdict(cluster, host: str, device: str, status: str) -> None:  # noqa: ANN001
    now = timezone.now()
    CheckResult.objects.create(
        cluster=cluster,
        kind="fabric",
        target=port_target(host, f"{device}/1"),
        status=status,
        at=now,
        since=now,
        details={"switch": "?"},
    )


def test_a_switch_counts_its_ports_by_verdict_and_is_marked_by_the_worst(cluster, client, users):
    _fleet(cluster, switches=3)
    _verdict(cluster, "n01-0", "mlx5_3", "fail")
    _verdict(cluster, "n01-1", "mlx5_3", "warn")
    for device in ("mlx5_0", "mlx5_1"):
        _verdict(cluster, "n01-2", device, "pass")
    _verdict(cluster, "n02-0", "mlx5_5", "warn")
    _verdict(cluster, "n02-0", "mlx5_6", "error")
    # a port cabled to a spine the node is not placed behind: the spine is a switch row too
    Port.objects.filter(node__hostname="n00-0", device="mlx5_7").update(switch="spine-1")
    _verdict(cluster, "n00-0", "mlx5_7", "fail")
    # a verdict on a port that is no longer reported counts nowhere
    _verdict(cluster, "n00-1", "mlx5_99", "fail")

    rows = {r.name: r for r in topology(cluster)["switch"]}
    assert rows["leaf-01"].ports == {"fail": 1, "warn": 1, "pass": 2, "unjudged": 28}
    assert rows["leaf-01"].port_worst == "fail"
    assert rows["leaf-02"].ports == {"warn": 1, "error": 1, "unjudged": 30}
    assert rows["leaf-02"].port_worst == "error"
    assert rows["leaf-00"].ports == {"unjudged": 31}
    assert rows["leaf-00"].port_worst == "unjudged"
    assert rows["spine-1"].ports == {"fail": 1}
    assert [t.hostname for t in rows["spine-1"].tiles] == ["n00-0"]
    assert len(rows["leaf-00"].tiles) == 4  # each node once, however many ports

    client.force_login(users["mia"])
    page = client.get("/topology/?cluster=c1").content.decode()
    # failing ports first, then warning; words and a glyph beside every colour
    order = [page.index(f'data-component="switch:{n}"') for n in ("leaf-01", "spine-1")]
    assert order[0] < order[1] < page.index('data-component="switch:leaf-02"')
    # the switch with nothing wrong (its ports not judged yet) after them, in the closed line
    components = topology_components(page)
    switches = [f"switch:{n}" for n in ("leaf-01", "spine-1", "leaf-02", "leaf-00")]
    assert list(components)[:4] == switches
    assert components["switch:leaf-00"] == "quiet" and components["switch:leaf-02"] == "shown"
    leaf01 = page[page.index('data-component="switch:leaf-01"') :]
    leaf01 = leaf01[: leaf01.index("</div>")]
    assert 'class="mono port-worst res-fail"' in leaf01
    assert "32 ports:" in leaf01
    assert "✗ 1 fail" in leaf01 and "◐ 1 warn" in leaf01 and "✓ 2 pass" in leaf01
    assert "· 28 not judged yet" in leaf01
    assert "? 1 not checked" in page
    assert any('data-ports-worst="unjudged"' in line for line in topology_quiet_lines(page))
    assert "port not judged yet" in page  # the legend


def test_a_switch_without_ports_shows_no_port_counts(cluster, client, users):
    _fleet(cluster, switches=1, ports=0)
    (row,) = topology(cluster)["switch"]
    assert row.port_count == 0 and row.port_worst == ""
    client.force_login(users["mia"])
    page = client.get("/topology/?cluster=c1").content.decode()
    assert topology_components(page) == {"switch:leaf-00": "quiet"}
    assert "ports-summary" not in page
    assert "port not judged yet" not in page  # no ports, no ports' legend


def test_a_port_with_no_switch_on_a_node_placed_nowhere_counts_nowhere(cluster):
    (node,) = nodes_register(cluster=cluster, specs=[NodeSpec(hostname="alone")])
    Port.objects.create(node=node, device="mlx5_0", port=1, ts=timezone.now())
    assert topology(cluster)["switch"] == []


def test_the_page_costs_the_same_queries_whatever_the_fabric_size(cluster, client, users):
    client.force_login(users["mia"])
    _fleet(cluster, switches=1, per_switch=2, ports=2)
    _verdict(cluster, "n00-0", "mlx5_1", "fail")
    client.get("/topology/?cluster=c1")  # warm whatever the layout caches
    with CaptureQueriesContext(connection) as small:
        assert client.get("/topology/?cluster=c1").status_code == 200
    more = nodes_register(
        cluster=cluster,
        specs=[
            NodeSpec(hostname=f"m{s:02d}-{i}", switch=f"leaf-m{s}")
            for s in range(6)
            for i in range(5)
        ],
    )
    Port.objects.bulk_create(
        Port(node=node, device=f"mlx5_{p}", port=1, switch=f"spine-{p}", ts=timezone.now())
        for node in more
        for p in range(8)
    )
    for node in more[:10]:
        _verdict(cluster, node.hostname, "mlx5_2", "warn")
    with CaptureQueriesContext(connection) as large:
        page = client.get("/topology/?cluster=c1").content.decode()
    assert "switch:spine-7" in topology_components(page)
    assert len(large.captured_queries) == len(small.captured_queries), [
        q["sql"][:120] for q in large.captured_queries
    ]


def test_a_switchs_failing_port_is_named_with_its_node_and_leads_there(cluster, client, users):  # noqa: ANN001
    """'✗ 1 fail' leads to the port and its node: the badge links to the switch's list of
    failing, unchecked and warning ports, each naming port and host, linking to that port's
    row in the node page's Ports card; passing ports are not listed."""
    _fleet(cluster, switches=2)
    CheckResult.objects.create(
        cluster=cluster,
        kind="fabric",
        target=port_target("n01-2", "mlx5_3/1"),
        status="fail",
        message="link down",
        at=timezone.now(),
        since=timezone.now(),
    )
    _verdict(cluster, "n01-0", "mlx5_1", "warn")
    _verdict(cluster, "n00-0", "mlx5_1", "pass")
    client.force_login(users["mia"])
    page = client.get("/topology/?cluster=c1").content.decode()
    assert '<a href="#ports-switch:leaf-01" title="Which ports, on which nodes">' in page
    faults = page[page.index('id="ports-switch:leaf-01"') :]
    faults = faults[: faults.index("</ul>")]
    link = (
        '<a href="/nodes/n01-2/#port-mlx5_3-1">port <span class="mono">mlx5_3/1</span> of '
        '<span class="mono">n01-2</span></a> <span class="muted">— link down</span>'
    )
    assert link in faults
    assert faults.index("n01-2") < faults.index("n01-0")  # the failing port before the warning
    assert 'id="ports-switch:leaf-00"' not in page  # a switch whose ports all pass lists none
    node_page = client.get("/nodes/n01-2/").content.decode()
    assert '<tr id="port-mlx5_3-1">' in node_page
