"""Alerts out (docs/alertmanager.md, Alerts out): the alert set made of open incidents, the
outbox a round writes (repeat, resolve, label change), the drain's backoff, the deploy
check, and the intake ignoring KUAE's own alerts when a site's Alertmanager sends them back.
The real Alertmanager HA pair is tests/incidents/test_alerts_out_real.py."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.checks import run_checks
from django.test import override_settings

from apps.incidents.alerts_out import (
    alert_set,
    alerts_out_drain,
    alerts_out_round,
    label_key,
)
from apps.incidents.models import AlertPost, Incident
from apps.incidents.services_alerts import alertmanager_ingest
from tests.incidents.webhooks import alert, webhook
from tests.support import closed_port

pytestmark = pytest.mark.django_db

NOW = dt.datetime(2026, 11, 28, 3, 0, tzinfo=dt.UTC)
AMS = ["http://am-a.example.com:9093", "http://am-b.example.com:9093/"]
BASE = "https://kuae.example.com"


def _incident(cluster, nodes=(), status="open", **fields):  # noqa: ANN001, ANN202
    values = {
        "title": "XID 79 on gpu000",
        "category": "gpu",
        "severity": "sev1",
        "detected_at": NOW - dt.timedelta(minutes=5),
        **fields,
    }
    incident = Incident.objects.create(cluster=cluster, status=status, **values)
    incident.nodes.set(nodes)
    return incident


def _sent() -> None:
    """As if every pending row had been delivered."""
    AlertPost.objects.update(pending=False)


@override_settings(KUAE_BASE_URL=BASE + "/")
def test_the_alert_set_is_the_open_incidents(cluster, nodes):
    occurred = NOW - dt.timedelta(minutes=9)
    one = _incident(cluster, [nodes[0]], occurred_at=occurred)
    two = _incident(cluster, nodes[1:3], severity="sev2", category="nic", title="NIC flaps")
    none = _incident(cluster, [], severity="sev3", category="storage", status="mitigated")
    info = _incident(cluster, [nodes[4]], severity="sev4", status="investigating")
    _incident(cluster, [nodes[5]], status="resolved")  # not open: no alert
    alerts = {a.subject: a for a in alert_set(NOW)}
    assert set(alerts) == {f"incident:{i.pk}" for i in (one, two, none, info)}
    first = alerts[f"incident:{one.pk}"]
    assert first.labels == {
        "alertname": "KuaeIncident",
        "severity": "critical",
        "category": "gpu",
        "cluster": "c1",
        "incident": str(one.pk),
        "node": "gpu000",
        "source": "kuae",
    }
    url = f"{BASE}/incidents/{one.pk}/"
    assert first.annotations == {"summary": "XID 79 on gpu000", "url": url}
    assert first.generator_url == url
    assert first.starts_at == occurred  # its failure time, not when it was detected
    second = alerts[f"incident:{two.pk}"]
    assert (second.labels["severity"], second.labels["nodes_count"]) == ("error", "2")
    assert "node" not in second.labels and second.annotations["summary"] == "NIC flaps"
    assert second.starts_at == two.detected_at
    third = alerts[f"incident:{none.pk}"]
    assert (third.labels["severity"], third.labels["nodes_count"]) == ("warning", "0")
    fourth = alerts[f"incident:{info.pk}"].labels
    assert (fourth["severity"], fourth["node"]) == ("info", "gpu004")


@override_settings(KUAE_ALERTMANAGER_URL=AMS, KUAE_ALERTMANAGER_REPEAT_S=60)
def test_a_round_writes_a_row_per_alert_and_alertmanager_and_repeats(cluster, nodes):
    incident = _incident(cluster, [nodes[0]])
    assert alerts_out_round(now=NOW) == {"new": 2}
    rows = list(AlertPost.objects.order_by("alertmanager"))
    assert [r.alertmanager for r in rows] == [u.rstrip("/") for u in AMS]
    assert all(r.pending and r.due_at == NOW for r in rows)
    assert {r.ends_at for r in rows} == {NOW + dt.timedelta(minutes=4)}  # now + 4 × repeat
    assert {r.subject for r in rows} == {f"incident:{incident.pk}"}
    _sent()
    assert alerts_out_round(now=NOW + dt.timedelta(seconds=30)) == {}  # nothing new yet
    assert not AlertPost.objects.filter(pending=True).exists()
    later = NOW + dt.timedelta(seconds=55)  # within a tick of the period: re-posted
    assert alerts_out_round(now=later) == {"repeated": 2}
    assert set(AlertPost.objects.values_list("ends_at", "pending")) == {
        (later + dt.timedelta(minutes=4), True)
    }


@override_settings(KUAE_ALERTMANAGER_URL=AMS[:1])
def test_a_resolved_incident_is_posted_once_more_with_ends_at_now(cluster, nodes):
    incident = _incident(cluster, [nodes[0]])
    alerts_out_round(now=NOW)
    _sent()
    incident.status = "resolved"
    incident.save()
    resolved = NOW + dt.timedelta(seconds=12)
    assert alerts_out_round(now=resolved) == {"ended": 1}
    row = AlertPost.objects.get()
    assert (row.ends_at, row.pending, row.due_at) == (resolved, True, resolved)
    assert alerts_out_round(now=resolved + dt.timedelta(seconds=10)) == {}  # ended once


@override_settings(KUAE_ALERTMANAGER_URL=AMS[:1])
def test_a_label_change_ends_the_old_label_set(cluster, nodes):
    incident = _incident(cluster, [nodes[0]])
    alerts_out_round(now=NOW)
    _sent()
    old = AlertPost.objects.get()
    incident.nodes.add(nodes[1])  # another node named: node="gpu000" → nodes_count="2"
    changed = NOW + dt.timedelta(seconds=10)
    assert alerts_out_round(now=changed) == {"new": 1, "ended": 1}
    old.refresh_from_db()
    assert (old.ends_at, old.pending) == (changed, True)
    assert old.labels["node"] == "gpu000"
    new = AlertPost.objects.exclude(pk=old.pk).get()
    assert new.labels["nodes_count"] == "2" and "node" not in new.labels
    assert new.label_key == label_key(new.labels) != old.label_key
    assert new.ends_at == changed + dt.timedelta(minutes=4)


def test_a_down_alertmanager_keeps_the_rows_and_backs_off(cluster, nodes):
    down = f"http://127.0.0.1:{closed_port()}"
    with override_settings(KUAE_ALERTMANAGER_URL=[down], KUAE_ALERTMANAGER_REPEAT_S=60):
        _incident(cluster, [nodes[0]])
        alerts_out_round(now=NOW)
        assert alerts_out_drain(now=NOW) == {"failed": 1}
        row = AlertPost.objects.get()
        assert row.pending and row.attempts == 1 and "ConnectError" in row.error
        assert row.due_at == NOW + dt.timedelta(seconds=5)
        assert alerts_out_drain(now=NOW + dt.timedelta(seconds=4)) == {}  # not due yet
        at = NOW + dt.timedelta(seconds=5)
        for expected in (10, 20, 40, 60, 60):  # doubling, capped at the repeat period
            assert alerts_out_drain(now=at) == {"failed": 1}
            row.refresh_from_db()
            assert row.due_at == at + dt.timedelta(seconds=expected)
            at = row.due_at
        # A round while it fails moves endsAt on but not the retry time.
        alerts_out_round(now=at - dt.timedelta(seconds=1))
        row.refresh_from_db()
        assert row.pending and row.due_at == at and row.attempts == 6


@override_settings(KUAE_ALERTMANAGER_URL=["http://am:9093"], KUAE_BASE_URL="http://127.0.0.1:8000")
def test_deploy_check_asks_for_the_base_url():
    assert "incidents.W001" in {m.id for m in run_checks(include_deployment_checks=True)}
    with override_settings(KUAE_BASE_URL="https://kuae.example.com"):
        assert "incidents.W001" not in {m.id for m in run_checks(include_deployment_checks=True)}
    with override_settings(KUAE_ALERTMANAGER_URL=[]):
        assert "incidents.W001" not in {m.id for m in run_checks(include_deployment_checks=True)}


def test_the_intake_ignores_kuae_s_own_alerts(cluster, nodes):
    ours = alert(
        "f" * 16,
        alertname="KuaeIncident",
        severity="critical",
        node="gpu000",
        cluster="c1",
        incident="7",
        source="kuae",
    )
    theirs = alert("e" * 16, node="gpu001", severity="critical")
    assert alertmanager_ingest(payload=webhook(ours, theirs), now=NOW)["ignored"] == 1
    assert alertmanager_ingest(payload=webhook(ours), now=NOW)["opened"] == 0
    assert list(Incident.objects.values_list("nodes__hostname", flat=True)) == ["gpu001"]
