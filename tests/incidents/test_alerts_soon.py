"""Alerts out at once (docs/alertmanager.md, Alerts out): opening, resolving or re-noding an
incident queues a round of alerts out when its transaction commits — a real message on the
broker — instead of waiting for the 10-s tick; the round posts each alert once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import transaction
from django.utils import timezone

from apps.incidents.models import Incident
from apps.incidents.services import incident_update
from apps.incidents.tasks import alerts_out
from tests.incidents.test_notify import BODY
from tests.support import LoopbackServer, QuietHandler

pytestmark = pytest.mark.django_db

TASK = "apps.incidents.tasks.alerts_out"


class _AM(QuietHandler):
    """A stand-in Alertmanager: keeps every `POST /api/v2/alerts` body."""

    received: list[list[dict]] = []

    def do_POST(self) -> None:  # noqa: N802
        type(self).received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(200)
        self.end_headers()


@pytest.fixture
def am(settings) -> Iterator[type[_AM]]:  # noqa: ANN001
    _AM.received = []
    with LoopbackServer(_AM) as server:
        settings.KUAE_ALERTMANAGER_URL = [server.url]
        settings.KUAE_BASE_URL = "https://ops.example"
        yield _AM


def _rounds_on_broker() -> set[Path]:
    """The alerts-out tasks waiting on the (filesystem) broker, as its message files."""
    folder = Path(django_settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"])
    return {f for f in folder.iterdir() if f.is_file() and TASK in f.read_text(errors="replace")}


def _open(api) -> int:  # noqa: ANN001
    body = {**BODY, "detected_at": timezone.now().isoformat()}
    return api("erin").post("/api/v1/incidents/", body, format="json").json()["id"]


@pytest.mark.django_db(transaction=True)  # real commits: the round is queued by each one
@pytest.mark.skipif(
    not django_settings.CELERY_BROKER_URL.startswith("filesystem://"),
    reason="reads the filesystem broker's queue",
)
def test_opening_an_incident_queues_its_alert_at_once(api, nodes, am):
    before = _rounds_on_broker()
    pk = _open(api)
    assert len(_rounds_on_broker() - before) == 1  # one round on the broker, on commit
    alerts_out()  # what the worker runs
    (posted,) = am.received
    assert [a["labels"]["incident"] for a in posted] == [str(pk)]
    alerts_out()  # the tick after it: nothing new, nothing posted again
    assert len(am.received) == 1
    # Resolving it queues the round that posts its end.
    with transaction.atomic():
        incident = Incident.objects.get(pk=pk)
        incident_update(incident=incident, changes={"status": "resolved"}, actor="erin")
    queued = _rounds_on_broker() - before
    assert len(queued) == 2
    alerts_out()
    assert len(am.received) == 2 and am.received[1][0]["labels"]["incident"] == str(pk)
    assert am.received[1][0]["endsAt"] <= timezone.now().isoformat()  # posted as ended
    for message in queued:  # what no worker here will take
        message.unlink()


def test_one_round_per_transaction_and_none_without_an_alertmanager(
    api, nodes, settings, django_capture_on_commit_callbacks
):
    settings.KUAE_ALERTMANAGER_URL = ["http://127.0.0.1:9"]
    with django_capture_on_commit_callbacks() as queued, transaction.atomic():
        first = Incident.objects.create(
            cluster=nodes[0].cluster,
            title="a",
            category="gpu",
            severity="sev2",
            detected_at=timezone.now(),
        )
        first.nodes.set(nodes[:2])
        Incident.objects.create(
            cluster=nodes[0].cluster,
            title="b",
            category="gpu",
            severity="sev2",
            detected_at=timezone.now(),
        )
    assert sum(getattr(f, "__name__", "") == "_queue_round" for f in queued) == 1
    settings.KUAE_ALERTMANAGER_URL = []
    with django_capture_on_commit_callbacks() as queued:
        _open(api)
    assert not [f for f in queued if getattr(f, "__name__", "") == "_queue_round"]


@pytest.mark.django_db(transaction=True)
def test_a_broker_that_is_down_does_not_fail_the_incidents_writer(api, nodes, am, monkeypatch):
    """The round is queued after the commit; a broker refusing it (as Redis down does, after
    kombu's retries) leaves the filing answered 201 and the incident stored — the tick
    posts its alert once the broker is back."""
    from kombu.exceptions import OperationalError

    def refused(*args: object, **kwargs: object) -> None:
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(alerts_out, "delay", refused)
    body = {**BODY, "detected_at": timezone.now().isoformat()}
    response = api("erin").post("/api/v1/incidents/", body, format="json")
    assert response.status_code == 201, response.content
    assert Incident.objects.filter(pk=response.json()["id"]).exists()
