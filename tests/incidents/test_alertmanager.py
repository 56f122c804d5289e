"""Alertmanager intake (CONTRACT §2): one incident per fingerprint, resolved with the alert."""

from __future__ import annotations

import copy
import json

import pytest

from apps.fleet.services import NodeSpec, nodes_register
from apps.incidents.models import Incident
from tests.support import SHARED

pytestmark = pytest.mark.django_db

FIRING = json.loads((SHARED / "alertmanager" / "firing.json").read_text())


@pytest.fixture
def a017(cluster):  # noqa: ANN001, ANN201
    return nodes_register(cluster=cluster, specs=[NodeSpec(hostname="gpu-a017")])[0]


def post(api, body):  # noqa: ANN001, ANN201
    return api("ada").post("/api/v1/ingest/alertmanager/", body, format="json")


def test_firing_opens_once_and_resolved_resolves(api, a017):
    first = post(api, FIRING)
    assert first.status_code == 200 and first.json() == {"opened": 1, "updated": 0, "resolved": 0}
    assert post(api, FIRING).json() == {"opened": 0, "updated": 1, "resolved": 0}
    incident = Incident.objects.get()
    assert (incident.category, incident.severity, incident.source) == (
        "gpu",
        "sev1",
        "alertmanager",
    )
    assert incident.title == "XID 79 on gpu-a017 GPU 3" and incident.cluster.name == "c1"
    assert list(incident.nodes.values_list("hostname", flat=True)) == ["gpu-a017"]
    assert incident.occurred_at.isoformat().startswith("2026-11-28T03:14:07")
    resolved = copy.deepcopy(FIRING)
    resolved["status"] = "resolved"
    resolved["alerts"][0].update(status="resolved", endsAt="2026-11-28T03:40:00Z")
    assert post(api, resolved).json()["resolved"] == 1
    incident.refresh_from_db()
    assert incident.status == "resolved" and incident.resolved_at.isoformat().startswith(
        "2026-11-28T03:40"
    )


def test_mapping_of_labels(api, cluster, a017):
    body = copy.deepcopy(FIRING)
    labels = body["alerts"][0]["labels"]
    del labels["Hostname"]
    labels.update(severity="warning", category="not-a-slug", instance="gpu-a017:9400")
    post(api, body)
    incident = Incident.objects.get()
    assert (incident.severity, incident.category) == ("sev3", "other")
    assert list(incident.nodes.values_list("hostname", flat=True)) == ["gpu-a017"]


def test_cluster_label_when_no_node_is_known(api, cluster):
    body = copy.deepcopy(FIRING)
    body["alerts"][0]["labels"].update(
        Hostname="elsewhere", instance="elsewhere:9400", cluster="c1"
    )
    assert post(api, body).json()["opened"] == 1
    assert Incident.objects.get().nodes.count() == 0


@pytest.mark.parametrize(
    "change,field",
    [
        ({"fingerprint": ""}, "alerts[0].fingerprint"),
        ({"startsAt": "soon"}, "alerts[0].startsAt"),
        ({"status": "maybe"}, "alerts[0].status"),
        ({"labels": {"alertname": "X"}}, "alerts[0].labels"),  # placed nowhere
    ],
)
def test_unusable_alerts_are_400(api, a017, change, field):
    body = copy.deepcopy(FIRING)
    body["alerts"][0].update(change)
    response = post(api, body)
    assert response.status_code == 400 and field in response.json()
    assert Incident.objects.count() == 0


def test_not_a_webhook_is_400_and_roles(api, a017):
    assert post(api, {"hello": 1}).status_code == 400
    assert (
        api("otto").post("/api/v1/ingest/alertmanager/", FIRING, format="json").status_code == 403
    )
