"""Alertmanager alerts naming a node of a window in progress are kept on the window as
silenced, with no incident — on exactly its nodes (docs/maintenance.md)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.incidents.models import Incident, UnroutedAlert
from apps.maintenance.models import SilencedAlert
from tests.incidents.webhooks import URL, alert, counts, webhook
from tests.maintenance.conftest import book

pytestmark = pytest.mark.django_db


def test_an_alert_on_a_window_s_node_is_silenced_and_one_elsewhere_opens(cluster, fleet, api):
    window = book(cluster, "n[04-05]")
    am = api("ada")
    body = webhook(
        alert("fp-in", node="n04", summary="XID 79"),
        alert("fp-fqdn", instance="n05.example.com:9400", alertname="NodeDown"),
        alert("fp-out", node="n06"),
    )
    r = am.post(URL, body, format="json")
    assert r.status_code == 200 and r.json() == counts(silenced=2, opened=1)
    (incident,) = Incident.objects.all()
    assert list(incident.nodes.values_list("hostname", flat=True)) == ["n06"]
    rows = {s.fingerprint: s for s in SilencedAlert.objects.all()}
    assert set(rows) == {"fp-in", "fp-fqdn"}
    assert {s.window_id for s in rows.values()} == {window.pk}
    assert (rows["fp-in"].node.hostname, rows["fp-in"].status) == ("n04", "firing")
    assert rows["fp-fqdn"].alertname == "NodeDown"
    # Alertmanager sends it again (an HA pair, a repeat): one row, deliveries counted.
    assert am.post(URL, webhook(alert("fp-in", node="n04")), format="json").json() == counts(
        silenced=1
    )
    assert SilencedAlert.objects.get(fingerprint="fp-in").deliveries == 2
    # It resolves: the row says so, still no incident.
    resolved = alert("fp-in", node="n04", status="resolved", ends="2026-11-28T04:00:00Z")
    assert am.post(URL, webhook(resolved), format="json").json() == counts(silenced=1)
    assert SilencedAlert.objects.get(fingerprint="fp-in").status == "resolved"
    assert Incident.objects.count() == 1 and not UnroutedAlert.objects.exists()
    # Shown on the window's answer and page.
    data = api("mia").get(f"/api/v1/maintenance/{window.pk}/").json()
    assert data["silenced_alerts"] == 2
    assert {a["fingerprint"] for a in data["silenced"]} == {"fp-in", "fp-fqdn"}


def test_after_the_window_the_alert_opens_an_incident(cluster, fleet, api):
    window = book(cluster, "n04")
    otto = api("otto")
    otto.delete(f"/api/v1/maintenance/{window.pk}/")
    r = api("ada").post(URL, webhook(alert("fp-late", node="n04")), format="json")
    assert r.json() == counts(opened=1)
    assert not SilencedAlert.objects.exists()


def test_a_future_window_silences_nothing_yet(cluster, fleet, api):
    book(cluster, "n04", start=timezone.now() + dt.timedelta(hours=1))
    r = api("ada").post(URL, webhook(alert("fp-early", node="n04")), format="json")
    assert r.json() == counts(opened=1)


def test_an_alert_already_on_an_incident_keeps_feeding_it(cluster, fleet, api):
    am = api("ada")
    am.post(URL, webhook(alert("fp-before", node="n04")), format="json")
    book(cluster, "n04")
    r = am.post(URL, webhook(alert("fp-before", node="n04")), format="json")
    assert r.json() == counts(updated=1)  # the incident it opened before the window stands
    assert not SilencedAlert.objects.exists()
