"""Alertmanager intake (docs/alertmanager.md) as Alertmanager really behaves: one incident per
fingerprint, re-opened (never duplicated) while it still fires, folded into a check's
incident, and a well-formed webhook never refused — what cannot be placed is kept."""

from __future__ import annotations

import copy
import datetime as dt

import pytest

from apps.fleet.services import NodeSpec, nodes_register
from apps.incidents.choices import Source
from apps.incidents.models import Incident, TimelineEntry, UnroutedAlert
from apps.incidents.services import incident_open, incident_update
from tests.incidents.webhooks import FIRING, URL, alert, counts, webhook

pytestmark = pytest.mark.django_db
FIRING_AT = dt.datetime(2026, 11, 28, 3, 0, tzinfo=dt.UTC)  # before the alert's startsAt


@pytest.fixture
def a017(cluster):  # noqa: ANN001, ANN201
    return nodes_register(cluster=cluster, specs=[NodeSpec(hostname="gpu-a017")])[0]


def post(api, body, who="ada"):  # noqa: ANN001, ANN201
    return api(who).post(URL, body, format="json")


def resolved(body, ends="2026-11-28T03:40:00Z"):  # noqa: ANN001, ANN201
    body = copy.deepcopy(body)
    body["status"] = "resolved"
    for a in body["alerts"]:
        a.update(status="resolved", endsAt=ends)
    return body


def test_firing_opens_once_and_resolved_resolves(api, a017):
    first = post(api, FIRING)
    assert first.status_code == 200 and first.json() == counts(opened=1)
    assert post(api, FIRING).json() == counts(updated=1)
    incident = Incident.objects.get()
    assert (incident.category, incident.severity, incident.source) == (
        "gpu",
        "sev1",
        "alertmanager",
    )
    assert incident.title == "XID 79 on gpu-a017 GPU 3" and incident.cluster.name == "c1"
    assert list(incident.nodes.values_list("hostname", flat=True)) == ["gpu-a017"]
    assert incident.occurred_at.isoformat().startswith("2026-11-28T03:14:07")
    assert incident.details["gpu"] == "3" and incident.details["alertname"] == "GPUXidError"
    assert post(api, resolved(FIRING)).json() == counts(resolved=1)
    assert post(api, resolved(FIRING)).json() == counts(ignored=1)  # the HA twin
    incident.refresh_from_db()
    assert incident.status == "resolved"
    assert incident.resolved_at.isoformat().startswith("2026-11-28T03:40")


def test_mapping_of_labels(api, cluster, a017):
    body = copy.deepcopy(FIRING)
    labels = body["alerts"][0]["labels"]
    del labels["Hostname"]
    labels.update(severity="warning", category="not-a-slug", instance="gpu-a017:9400")
    post(api, body)
    incident = Incident.objects.get()
    # not a slug: the XID in the summary decides (79, fallen off the bus → gpu)
    assert (incident.severity, incident.category) == ("sev3", "gpu")
    assert list(incident.nodes.values_list("hostname", flat=True)) == ["gpu-a017"]


@pytest.mark.parametrize(
    "labels,category,severity",
    [
        (
            {"alertname": "DCGM_FI_DEV_XID_ERRORS", "xid": "48", "severity": "error"},
            "gpu_hbm",
            "sev2",
        ),
        (
            {"alertname": "GpuXid", "err_code": "119", "severity": "major"},
            "gpu_system_processor",
            "sev2",
        ),
        ({"alertname": "GpuThermal", "severity": "critical"}, "gpu_thermal", "sev1"),
        ({"alertname": "NodeDown", "severity": "info"}, "node_unreachable", "sev4"),
        ({"alertname": "NcclTimeout"}, "nccl_timeout", "sev4"),
        ({"alertname": "SomethingOdd", "category": "storage"}, "storage", "sev4"),
        ({"alertname": "SomethingOdd"}, "other", "sev4"),
    ],
)
def test_category_and_severity(api, a017, labels, category, severity):
    post(api, webhook(alert("f1", Hostname="gpu-a017", **labels)))
    incident = Incident.objects.get()
    assert (incident.category, incident.severity) == (category, severity)


def test_cluster_label_when_no_node_is_known(api, cluster):
    body = copy.deepcopy(FIRING)
    body["alerts"][0]["labels"].update(
        Hostname="elsewhere", instance="elsewhere:9400", cluster="c1"
    )
    assert post(api, body).json()["opened"] == 1
    assert Incident.objects.get().nodes.count() == 0


def test_an_alert_placed_nowhere_is_kept_and_the_rest_of_its_group_goes_on(api, a017):
    body = webhook(
        alert("known", Hostname="gpu-a017"),
        alert("stray", Hostname="gpu-z999", job="dcgm", summary="XID 31 on gpu-z999"),
    )
    response = post(api, body)
    assert response.status_code == 200 and response.json() == counts(opened=1, unrouted=1)
    assert post(api, body).json() == counts(updated=1, unrouted=1)  # Alertmanager re-sends
    assert Incident.objects.count() == 1
    stray = UnroutedAlert.objects.get()
    assert (stray.fingerprint, stray.status, stray.deliveries) == ("stray", "firing", 2)
    assert stray.labels["Hostname"] == "gpu-z999" and stray.annotations["summary"]
    assert "no known node" in stray.reason
    gone = resolved(webhook(alert("stray", Hostname="gpu-z999")), ends="2026-11-28T04:00:00Z")
    assert post(api, gone).json() == counts(unrouted=1)
    stray.refresh_from_db()
    assert (stray.status, stray.deliveries) == ("resolved", 3)
    assert stray.ends_at.isoformat().startswith("2026-11-28T04:00")


def test_a_node_registered_later_takes_its_alert_over(api, cluster):
    body = webhook(alert("late", Hostname="gpu-new"))
    assert post(api, body).json() == counts(unrouted=1)
    nodes_register(cluster=cluster, specs=[NodeSpec(hostname="gpu-new")])
    assert post(api, body).json() == counts(opened=1)
    assert not UnroutedAlert.objects.exists()


@pytest.mark.parametrize(
    "change,field",
    [
        ({"fingerprint": ""}, "alerts[0].fingerprint"),
        ({"fingerprint": "x" * 65}, "alerts[0].fingerprint"),
        ({"startsAt": "soon"}, "alerts[0].startsAt"),
        ({"startsAt": None}, "alerts[0].startsAt"),
        ({"endsAt": "later"}, "alerts[0].endsAt"),
        ({"status": "maybe"}, "alerts[0].status"),
        ({"labels": "Hostname=gpu-a017"}, "alerts[0].labels"),
        ({"labels": {"alertname": {"nested": 1}}}, "alerts[0].labels"),
        ({"labels": {"alertname": "X\x00"}}, "alerts[0].labels"),
        ({"annotations": ["a"]}, "alerts[0].annotations"),
    ],
)
def test_a_malformed_alert_is_400_and_nothing_of_the_batch_is_stored(api, a017, change, field):
    body = webhook(alert("other", Hostname="gpu-z999"), alert("fp", Hostname="gpu-a017"))
    body["alerts"].reverse()
    body["alerts"][0].update(change)
    response = post(api, body)
    assert response.status_code == 400 and field in response.json()
    assert not Incident.objects.exists() and not UnroutedAlert.objects.exists()


def test_not_a_webhook_is_400_and_roles(api, a017):
    assert post(api, {"hello": 1}).status_code == 400
    assert post(api, {"version": "3", "alerts": []}).json() == {
        "version": ["only webhook version 4 is understood"]
    }
    assert post(api, FIRING, who="otto").status_code == 403


def test_bearer_token_as_alertmanager_sends_it(client, users, a017):
    from apps.accounts.services import token_issue

    token = token_issue(user=users["ada"])
    ok = client.post(
        URL, FIRING, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert ok.status_code == 200 and ok.json()["opened"] == 1


def test_more_than_1000_alerts_is_refused_naming_the_bound(api, a017):
    body = webhook(*[alert(f"f{i}", Hostname="gpu-a017") for i in range(1001)])
    response = post(api, body)
    assert response.status_code == 400 and "at most 1000 alerts" in response.json()["alerts"][0]
    assert not Incident.objects.exists()


def test_at_most_200_incidents_per_webhook_the_rest_kept_until_resent(api, a017):
    body = webhook(*[alert(f"f{i:03d}", Hostname="gpu-a017") for i in range(203)])
    assert post(api, body).json() == counts(opened=200, deferred=3)
    deferred = UnroutedAlert.objects.order_by("fingerprint")
    assert [a.fingerprint for a in deferred] == ["f200", "f201", "f202"]
    assert "200 incidents" in deferred[0].reason
    assert post(api, body).json() == counts(opened=3, updated=200)
    assert Incident.objects.count() == 203 and not UnroutedAlert.objects.exists()


def test_still_firing_after_a_person_resolved_it_reopens_the_same_incident(api, users, a017):
    post(api, FIRING)
    incident = Incident.objects.get()
    incident_update(incident=incident, changes={"status": "resolved"}, actor="erin")
    assert post(api, FIRING).json() == counts(reopened=1)
    assert post(api, FIRING).json() == counts(updated=1)
    incident.refresh_from_db()
    assert Incident.objects.count() == 1
    assert (incident.status, incident.resolved_at) == ("open", None)
    note = incident.timeline.order_by("-id").first()
    assert note.actor == "alertmanager" and note.text.startswith("re-opened")
    assert "still firing" in note.text


def test_a_later_firing_after_resolution_is_a_new_incident_a_stale_copy_is_not(api, a017):
    post(api, FIRING)
    post(api, resolved(FIRING))
    assert post(api, FIRING).json() == counts(ignored=1)  # late copy of the resolved firing
    again = copy.deepcopy(FIRING)
    again["alerts"][0]["startsAt"] = "2026-11-28T09:00:00Z"
    assert post(api, again).json() == counts(opened=1)
    assert list(Incident.objects.order_by("id").values_list("status", flat=True)) == [
        "resolved",
        "open",
    ]


def test_a_firing_whose_resolution_was_missed_stays_on_its_open_incident(api, a017):
    post(api, FIRING)
    again = copy.deepcopy(FIRING)
    again["alerts"][0]["startsAt"] = "2026-11-28T09:00:00Z"
    assert post(api, again).json() == counts(updated=1)
    assert Incident.objects.count() == 1


def test_folds_into_the_check_incident_for_the_same_category_and_node(api, cluster, a017):
    check = incident_open(
        cluster=cluster,
        title="GPU errors: gpu-a017",
        category="gpu",
        severity="sev2",
        detected_at=FIRING_AT,
        nodes=[a017],
        source=Source.HEALTH,
        actor="check:gpu_errors",
    )
    assert post(api, FIRING).json() == counts(folded=1)
    assert post(api, FIRING).json() == counts(updated=1)
    assert Incident.objects.count() == 1
    note = check.timeline.filter(actor="alertmanager").get()
    assert "folded" in note.text and "GPU 3" in note.text
    assert post(api, resolved(FIRING)).json() == counts(resolved=1)
    check.refresh_from_db()
    assert check.status == "open"  # the check's (or an engineer's) to resolve
    assert check.timeline.filter(actor="alertmanager", text__contains="resolved").exists()


def test_another_category_on_that_node_is_its_own_incident(api, cluster, a017):
    incident_open(
        cluster=cluster,
        title="Thermal: gpu-a017",
        category="gpu_thermal",
        severity="sev4",
        detected_at=FIRING_AT,
        nodes=[a017],
        source=Source.HEALTH,
    )
    assert post(api, FIRING).json() == counts(opened=1)
    assert Incident.objects.count() == 2


def test_the_incident_page_shows_the_gpu(client, users, api, a017):
    body = copy.deepcopy(FIRING)
    body["alerts"][0]["labels"]["UUID"] = "GPU-8e1f2c3d-0000-4a5b-9c8d-7e6f5a4b3c2d"
    post(api, body)
    incident = Incident.objects.get()
    client.force_login(users["mia"])
    page = client.get(f"/incidents/{incident.pk}/").content.decode()
    assert "GPU 3" in page and "GPU-8e1f2c3d-0000-4a5b-9c8d-7e6f5a4b3c2d" in page
    assert api("mia").get(f"/api/v1/incidents/{incident.pk}/").json()["details"]["gpu"] == "3"
    assert TimelineEntry.objects.filter(incident=incident, kind="opened").exists()
