"""Four clients at once filing incidents naming overlapping nodes in different orders,
changing those nodes' states and putting them in maintenance (issue 32, a failure history
replayed): every answer is 2xx — a write conflict is retried inside the server, never
answered 503 — and the rows agree (docs/architecture.md, Locks).

Real PostgreSQL only: its row locks are what can deadlock; SQLite has one writer at a time."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from apps.fleet.models import Node, NodeStateChange
from apps.fleet.services import NodeSpec, nodes_register
from apps.incidents.models import Incident

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="PostgreSQL's row locks are what deadlock; SQLite serialises every writer "
        "(CI runs this on PostgreSQL)",
    ),
]
HOSTS = [f"gpu-w{i:02d}" for i in range(6)]
ROUNDS = 6
STATES = ("drained", "healthy", "down", "healthy")


def _file(client: Any, order: list[str], n: int) -> list[int]:
    body = {
        "title": f"XID on {order[0]} ({n})",
        "cluster": "c1",
        "category": "gpu",
        "severity": "sev3",
        "detected_at": timezone.now().isoformat(),
        "nodes": order,
        "interrupts_job": False,
        "planned": False,
    }
    r = client.post("/api/v1/incidents/", body, format="json")
    codes = [r.status_code]
    if r.status_code == 201:  # and re-link it, the other way round
        r2 = client.patch(
            f"/api/v1/incidents/{r.json()['id']}/", {"nodes": order[::-1][:4]}, format="json"
        )
        codes.append(r2.status_code)
    return codes


def _states(client: Any, order: list[str], n: int) -> list[int]:
    state = STATES[n % len(STATES)]
    return [
        client.post(
            f"/api/v1/nodes/{h}/state/", {"state": state, "reason": f"round {n}"}, format="json"
        ).status_code
        for h in order
    ]


def _maintenance(client: Any, order: list[str], n: int) -> list[int]:
    body = {
        "cluster": "c1",
        "nodes": order,
        "end": (timezone.now() + dt.timedelta(hours=1)).isoformat(),
        "reason": f"swap PSU ({n})",
    }
    r = client.post("/api/v1/maintenance/", body, format="json")
    codes = [r.status_code]
    if r.status_code == 201:
        codes.append(client.delete(f"/api/v1/maintenance/{r.json()['id']}/").status_code)
    return codes


def test_concurrent_writers_neither_deadlock_nor_answer_503(api, cluster):  # noqa: ANN001
    nodes_register(cluster=cluster, specs=[NodeSpec(hostname=h) for h in HOSTS])
    forward, backward = HOSTS, HOSTS[::-1]
    middle_out = [HOSTS[i] for i in (3, 1, 5, 0, 4, 2)]
    work: list[tuple[str, Callable[[Any, list[str], int], list[int]], list[str]]] = [
        ("erin", _file, forward),
        ("eve", _file, backward),
        ("otto", _states, middle_out),
        ("otto", _maintenance, backward),
    ]
    clients = [api(who) for who, _, _ in work]
    start = threading.Barrier(len(work))
    answers: list[list[int]] = [[] for _ in work]
    errors: list[BaseException] = []

    def client_loop(i: int) -> None:
        _, step, order = work[i]
        try:
            for n in range(ROUNDS):
                start.wait(timeout=30)
                answers[i].extend(step(clients[i], order, n))
        except BaseException as exc:  # noqa: BLE001 — reported below, not lost in a thread
            errors.append(exc)
            start.abort()
        finally:
            connection.close()

    threads = [threading.Thread(target=client_loop, args=(i,)) for i in range(len(work))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a client hung"
    assert not errors, errors
    every = [code for codes in answers for code in codes]
    assert 503 not in every, answers
    assert all(200 <= code < 300 for code in every), answers
    # rows consistent: every incident filed, each linked to the nodes its PATCH named
    incidents = list(Incident.objects.prefetch_related("nodes"))
    assert len(incidents) == 2 * ROUNDS
    for incident in incidents:
        linked = sorted(n.hostname for n in incident.nodes.all())
        assert len(linked) == 4
        assert incident.timeline.count() == 2  # opened, updated
    # each node's current state is its newest history entry
    for node in Node.objects.filter(hostname__in=HOSTS):
        newest = NodeStateChange.objects.filter(node=node).order_by("-at", "-id").first()
        assert newest is not None and (node.state, node.state_reason) == (
            newest.state,
            newest.reason,
        )
