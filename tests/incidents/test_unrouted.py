"""Unrouted alerts: `GET alerts/unrouted/?since=` (readers), the operators' page reached
from the incident list, and the count in /metrics."""

from __future__ import annotations

import datetime as dt

import pytest
from django.test import override_settings
from django.utils import timezone

from apps.incidents.models import UnroutedAlert
from tests.incidents.webhooks import URL, alert, webhook

pytestmark = pytest.mark.django_db
LIST = "/api/v1/alerts/unrouted/"


@pytest.fixture
def strays(api, cluster):  # noqa: ANN001, ANN201
    body = webhook(
        alert("fp-1", Hostname="gpu-z001", gpu="2", summary="XID 79 on gpu-z001"),
        alert("fp-2", instance="10.9.9.9:9100", alertname="NodeDown", severity="warning"),
        alert("fp-3", status="resolved", ends="2026-11-28T05:00:00Z", Hostname="gpu-z003"),
    )
    assert api("ada").post(URL, body, format="json").json()["unrouted"] == 3
    UnroutedAlert.objects.filter(fingerprint="fp-3").update(
        received_at=timezone.now() - dt.timedelta(days=2)
    )


def test_list_since_and_paginated(api, strays):
    everything = api("mia").get(LIST).json()
    assert everything["count"] == 3
    first = everything["results"][0]
    assert set(first) >= {
        "fingerprint",
        "labels",
        "annotations",
        "status",
        "starts_at",
        "ends_at",
        "received_at",
        "deliveries",
    }
    since = (timezone.now() - dt.timedelta(hours=1)).isoformat()
    recent = api("otto").get(LIST, {"since": since}).json()
    assert sorted(a["fingerprint"] for a in recent["results"]) == ["fp-1", "fp-2"]
    page = api("mia").get(LIST, {"page_size": 1}).json()
    assert page["count"] == 3 and len(page["results"]) == 1 and page["next"]
    firing = api("mia").get(LIST, {"status": "firing"}).json()
    assert firing["count"] == 2


def test_bad_since_is_400_naming_it_and_roles(api, strays):
    response = api("mia").get(LIST, {"since": "last tuesday"})
    assert response.status_code == 400 and "since" in response.json()
    assert api("ada").get(LIST).status_code == 403
    assert api(None).get(LIST).status_code == 401


def test_page_shows_labels_readably_and_is_linked_from_incidents(client, users, strays):
    client.force_login(users["otto"])
    incidents = client.get("/incidents/").content.decode()
    assert 'href="/alerts/unrouted/?status=firing"' in incidents and "2 firing" in incidents
    page = client.get("/alerts/unrouted/").content.decode()
    assert "Hostname=<b>gpu-z001</b>" in page and "gpu=<b>2</b>" in page
    assert "instance=<b>10.9.9.9:9100</b>" in page and "NodeDown" in page
    assert "XID 79 on gpu-z001" in page
    only = client.get("/alerts/unrouted/?status=resolved&sort=-deliveries").content.decode()
    assert "gpu-z003" in only and "gpu-z001" not in only


@override_settings(KUAE_METRICS_TOKEN="scrape")
def test_counted_in_metrics(client, strays):
    body = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape").content.decode()
    assert 'kuae_unrouted_alerts{status="firing"} 2.0' in body
    assert 'kuae_unrouted_alerts{status="resolved"} 1.0' in body


def test_unrouted_alerts_are_pruned_past_their_retention_age(api, strays, settings):
    """issue 41: unrouted alerts grew without a bound (docs/operations.md, Backups)."""
    from apps.incidents import tasks
    from kuaeweb.schedule import beat_schedule

    assert settings.KUAE_RETAIN_UNROUTED_DAYS == 30
    assert beat_schedule()["prune-unrouted-alerts"]["task"] == "apps.incidents.tasks.prune_unrouted"
    UnroutedAlert.objects.filter(fingerprint="fp-2").update(
        received_at=timezone.now() - dt.timedelta(days=31)
    )
    assert tasks.prune_unrouted.apply().get() == 1
    assert sorted(UnroutedAlert.objects.values_list("fingerprint", flat=True)) == ["fp-1", "fp-3"]


def test_unrouted_alerts_kept_are_bounded(api, strays, monkeypatch):
    """issue 41: unrouted alerts grew without a bound: at most UNROUTED_ALERTS_KEPT rows; a
    new fingerprint past it is counted in the answer, not kept (docs/operations.md, Limits);
    one already kept is still updated."""
    import apps.incidents.services_alerts as intake

    assert intake.UNROUTED_ALERTS_KEPT == 10_000
    monkeypatch.setattr(intake, "UNROUTED_ALERTS_KEPT", 3)
    body = webhook(
        alert("fp-4", Hostname="gpu-z004", summary="four"),
        alert("fp-1", Hostname="gpu-z001", gpu="2", summary="XID 79 again"),
    )
    assert api("ada").post(URL, body, format="json").json()["unrouted"] == 2
    assert sorted(UnroutedAlert.objects.values_list("fingerprint", flat=True)) == [
        "fp-1",
        "fp-2",
        "fp-3",
    ]
    assert UnroutedAlert.objects.get(fingerprint="fp-1").deliveries == 2
