"""Owners, one-step acknowledgement and escalation (docs/on-call.md)."""

from __future__ import annotations

import datetime as dt

from django.core import mail
from django.test import override_settings
from django.utils import timezone

from apps.fleet.models import Cluster, Node
from apps.incidents.models import Delivery, Incident
from apps.incidents.services import incident_open
from apps.incidents.services_notify import incident_page_url
from apps.incidents.services_owners import incidents_escalate
from apps.incidents.tasks import delivery_send_task


def _incident(
    cluster: Cluster, nodes: list[Node], severity: str = "sev1", age_min: int = 0
) -> Incident:
    return incident_open(
        cluster=cluster,
        title="XID 79 on gpu000",
        category="gpu",
        severity=severity,
        detected_at=timezone.now() - dt.timedelta(minutes=age_min),
        nodes=nodes[:1],
        actor="check:gpu_errors",
    )


def test_ack_is_one_request_and_one_timeline_line(api, cluster: Cluster, nodes: list[Node]) -> None:  # noqa: ANN001
    incident = _incident(cluster, nodes)
    lines = incident.timeline.count()
    otto = api("otto")
    r = otto.post(f"/api/v1/incidents/{incident.pk}/ack/")
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["status"] == "investigating"
    assert body["acknowledged_by"] == "otto" and body["acknowledged_at"]
    assert incident.timeline.count() == lines + 1
    assert (
        "acknowledged; status: open → investigating"
        in incident.timeline.order_by("-id").first().text
    )

    again = otto.post(f"/api/v1/incidents/{incident.pk}/ack/").json()
    assert again["acknowledged_at"] == body["acknowledged_at"]
    assert incident.timeline.count() == lines + 1  # a second ack writes nothing
    assert api("mia").post(f"/api/v1/incidents/{incident.pk}/ack/").status_code == 403


def test_assignee_set_by_operator_named_by_username(
    api, users, cluster: Cluster, nodes: list[Node]
) -> None:  # noqa: ANN001
    incident = _incident(cluster, nodes)
    r = api("otto").patch(f"/api/v1/incidents/{incident.pk}/", {"assignee": "erin"}, format="json")
    assert r.status_code == 200, r.content
    assert r.json()["assignee"] == "erin"
    assert "assignee: — → erin" in incident.timeline.order_by("-id").first().text
    lines = incident.timeline.count()
    api("otto").patch(f"/api/v1/incidents/{incident.pk}/", {"assignee": "erin"}, format="json")
    assert incident.timeline.count() == lines  # no line for a field that did not change
    r = api("otto").patch(
        f"/api/v1/incidents/{incident.pk}/", {"assignee": "nobody-here"}, format="json"
    )
    assert r.status_code == 400 and "assignee" in r.json()
    mine = api("erin").get("/api/v1/incidents/", {"assignee": "me"}).json()
    assert [i["id"] for i in mine["results"]] == [incident.pk]


@override_settings(
    KUAE_ESCALATION_EMAILS=["lead@example.com"],
    KUAE_ESCALATION_WEBHOOK="",
    KUAE_ESCALATE_SEV1_MIN=10,
    KUAE_ESCALATE_SEV2_MIN=30,
)
def test_unacknowledged_sev1_and_sev2_escalate_once(cluster: Cluster, nodes: list[Node]) -> None:
    late1 = _incident(cluster, nodes, "sev1", age_min=11)
    early1 = _incident(cluster, nodes, "sev1", age_min=5)
    late2 = _incident(cluster, nodes, "sev2", age_min=31)
    early2 = _incident(cluster, nodes, "sev2", age_min=20)
    acked = _incident(cluster, nodes, "sev1", age_min=50)
    Incident.objects.filter(pk=acked.pk).update(
        acknowledged_at=timezone.now(), status="investigating"
    )
    sev3 = _incident(cluster, nodes, "sev3", age_min=500)
    mail.outbox.clear()

    assert incidents_escalate() == 2
    assert incidents_escalate() == 0  # once per incident
    escalated = set(
        Incident.objects.filter(escalated_at__isnull=False).values_list("pk", flat=True)
    )
    assert escalated == {late1.pk, late2.pk}
    assert not {early1.pk, early2.pk, acked.pk, sev3.pk} & escalated
    assert (
        "escalated: sev1 not acknowledged after 11 min"
        in late1.timeline.order_by("-id").first().text
    )
    sent = Delivery.objects.filter(purpose="escalated")
    assert {d.incident_id for d in sent} == {late1.pk, late2.pk} and {d.channel for d in sent} == {
        "email"
    }
    for delivery in sent:
        assert delivery_send_task(delivery.pk) is True  # what the worker runs
    escalations = [m for m in mail.outbox if "ESCALATED" in m.subject]
    assert len(escalations) == 2 and escalations[0].to == ["lead@example.com"]
    links = {m.body.strip().rsplit("\n", 1)[-1] for m in escalations}  # each links its page
    assert links == {incident_page_url(i) for i in (late1, late2)}


def test_incident_page_acknowledges_in_one_click(
    client, users, cluster: Cluster, nodes: list[Node]
) -> None:  # noqa: ANN001
    incident = _incident(cluster, nodes)
    client.force_login(users["otto"])
    page = client.get(f"/incidents/{incident.pk}/").content.decode()
    assert "Acknowledge</button>" in page and "not yet" in page
    r = client.post(f"/incidents/{incident.pk}/ack/")
    assert r.status_code == 302
    page = client.get(f"/incidents/{incident.pk}/").content.decode()
    assert "Acknowledge</button>" not in page and "Investigating" in page
    client.post(f"/incidents/{incident.pk}/take/")
    incident.refresh_from_db()
    assert incident.assignee == "otto"


def test_assign_to_someone_else_from_the_incident_page(client, users, cluster) -> None:  # noqa: ANN001
    """Issue 32.4: a select of people who may take it (operators, engineers, admins)."""
    from apps.incidents.services import incident_open

    incident = incident_open(
        cluster=cluster, title="x", category="gpu", severity="sev3", detected_at=timezone.now()
    )
    client.force_login(users["otto"])
    page = client.get(f"/incidents/{incident.pk}/").content.decode()
    select = page[page.index('<select id="assign-to"') :]
    select = select[: select.index("</select>")]
    assert 'value="erin"' in select and 'value="root"' in select and 'value="otto"' in select
    assert 'value="mia"' not in select and 'value="ada"' not in select  # manager, agent
    r = client.post(f"/incidents/{incident.pk}/take/", {"assignee": "erin"})
    assert r.status_code == 302
    incident.refresh_from_db()
    assert incident.assignee == "erin"
    client.post(f"/incidents/{incident.pk}/take/", {"assignee": "mia"})  # a manager: refused
    incident.refresh_from_db()
    assert incident.assignee == "erin"
