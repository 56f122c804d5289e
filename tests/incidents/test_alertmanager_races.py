"""An Alertmanager HA pair delivers each notification twice at about the same moment:
deliveries racing on real connections (threads; PostgreSQL when DATABASE_URL is set,
SQLite otherwise) still make exactly one incident per fingerprint and one unrouted row."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from apps.fleet.services import NodeSpec, nodes_register
from apps.incidents.models import AlertFingerprint, Incident, UnroutedAlert
from apps.incidents.services import incident_update
from tests.incidents.webhooks import URL, alert, webhook

pytestmark = pytest.mark.django_db(transaction=True)
DELIVERIES = 6


def race(
    api: Callable[[str], Any], bodies: list[dict[str, Any]]
) -> list[tuple[int, dict[str, int]]]:
    """Post every body at once, each from its own thread and database connection."""
    clients = [api("ada") for _ in bodies]
    start = threading.Barrier(len(bodies))
    answers: list[tuple[int, dict[str, int]]] = [(0, {})] * len(bodies)

    def deliver(i: int) -> None:
        try:
            start.wait(timeout=10)
            response = clients[i].post(URL, bodies[i], format="json")
            answers[i] = (response.status_code, response.json())
        finally:
            connection.close()

    threads = [threading.Thread(target=deliver, args=(i,)) for i in range(len(bodies))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "a delivery hung"
    return answers


@pytest.fixture
def hosts(cluster):  # noqa: ANN001, ANN201
    return nodes_register(
        cluster=cluster, specs=[NodeSpec(hostname=f"gpu-b{i:03d}") for i in range(4)]
    )


def test_simultaneous_copies_open_one_incident(api, hosts):
    body = webhook(alert("fp-ha", Hostname="gpu-b000", severity="warning"))
    answers = race(api, [body] * DELIVERIES)
    assert [status for status, _ in answers] == [200] * DELIVERIES
    assert sum(a["opened"] for _, a in answers) == 1
    assert sum(a["updated"] for _, a in answers) == DELIVERIES - 1
    incident = Incident.objects.get()
    assert incident.fingerprint == "am:fp-ha" and incident.timeline.count() == 1
    assert AlertFingerprint.objects.get().incident_id == incident.pk


def test_overlapping_groups_in_any_order_neither_deadlock_nor_duplicate(api, hosts):
    alerts = [alert(f"fp-{i}", Hostname=f"gpu-b{i:03d}", severity="warning") for i in range(4)]
    bodies = [webhook(*alerts), webhook(*reversed(alerts)), webhook(*alerts[1:3])] * 2
    answers = race(api, bodies)
    assert [status for status, _ in answers] == [200] * len(bodies)
    assert sum(a["opened"] for _, a in answers) == 4
    assert sorted(Incident.objects.values_list("fingerprint", flat=True)) == [
        f"am:fp-{i}" for i in range(4)
    ]


def test_simultaneous_copies_after_a_person_resolved_reopen_once(api, hosts):
    body = webhook(alert("fp-again", Hostname="gpu-b001", severity="warning"))
    api("ada").post(URL, body, format="json")
    incident = Incident.objects.get()
    incident_update(incident=incident, changes={"status": "resolved"}, actor="erin")
    answers = race(api, [body] * DELIVERIES)
    assert sum(a["reopened"] for _, a in answers) == 1
    assert Incident.objects.count() == 1 and Incident.objects.get().status == "open"
    assert incident.timeline.filter(text__startswith="re-opened").count() == 1


def test_simultaneous_copies_of_an_unrouted_alert_make_one_row(api, hosts):
    body = webhook(alert("fp-stray", Hostname="gpu-nowhere"))
    answers = race(api, [body] * DELIVERIES)
    assert [status for status, _ in answers] == [200] * DELIVERIES
    stray = UnroutedAlert.objects.get()
    assert stray.deliveries == DELIVERIES and not Incident.objects.exists()
