"""Two Slurm intakes at once naming the same new nodes (docs/integrations.md, 4. Slurm:
"register it once"): real connections in threads (PostgreSQL when DATABASE_URL is set, SQLite
otherwise), held at a barrier after each has found the nodes unknown, so both insert them.
Before, the loser's unique violation was an HTML 500."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

import apps.fleet.services.nodes as fleet_nodes
from apps.fleet.models import GPU, Node, NodeStateChange
from apps.jobs.models import Job
from tests.support import SHARED

pytestmark = pytest.mark.django_db(transaction=True)
URL = "/api/v1/ingest/slurm/?cluster=c1"


def load(name: str) -> dict[str, Any]:
    return json.loads((SHARED / "slurm" / "22.05" / name).read_text())


def race(api: Callable[[str], Any], bodies: list[dict[str, Any]], monkeypatch) -> list[int]:  # noqa: ANN001
    """Post the bodies at once; each waits, nodes found unknown, until all have looked (on
    SQLite, whose writers take turns, the barrier gives way after 2 s)."""
    clients = [api("ada") for _ in bodies]
    looked = threading.Barrier(len(bodies))
    register = fleet_nodes.nodes_register  # what the intakes' nodes_claim calls

    def held(**kwargs: Any) -> Any:
        with contextlib.suppress(threading.BrokenBarrierError):
            looked.wait(timeout=2)
        return register(**kwargs)

    monkeypatch.setattr(fleet_nodes, "nodes_register", held)
    answers = [0] * len(bodies)

    def deliver(i: int) -> None:
        try:
            answers[i] = clients[i].post(URL, bodies[i], format="json").status_code
        finally:
            connection.close()

    threads = [threading.Thread(target=deliver, args=(i,)) for i in range(len(bodies))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "an intake hung"
    return answers


def test_the_same_answer_twice_at_once(api, cluster, monkeypatch):
    body = load("squeue-22.05.json")
    assert race(api, [body, body], monkeypatch) == [200, 200]
    assert sorted(Node.objects.values_list("hostname", flat=True)) == ["rcgpu01", "rcgpu02"]
    assert GPU.objects.count() == 16 and NodeStateChange.objects.count() == 2
    assert Job.objects.count() == 6  # each job once too
    assert Job.objects.get(external_id="1").nodes.count() == 1


def test_two_answers_naming_the_same_new_nodes(api, cluster, monkeypatch):
    bodies = [load("sacct-22.05-battery.json"), load("slurmrestd-v0.0.38-slurm-jobs.json")]
    assert race(api, bodies, monkeypatch) == [200, 200]
    assert Node.objects.filter(hostname__startswith="rcgpu").count() == 2
    assert GPU.objects.count() == 16
    assert Job.objects.get(external_id="5").nodes.count() == 2
