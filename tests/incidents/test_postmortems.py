"""Postmortems: write, submit, review by another engineer (docs/incidents.md, Postmortems)."""

from __future__ import annotations

import pytest

from apps.incidents.models import Postmortem, TimelineEntry

pytestmark = pytest.mark.django_db

INCIDENT = {
    "title": "XID 79",
    "cluster": "c1",
    "category": "gpu",
    "severity": "sev2",
    "detected_at": "2026-11-23T08:01:00Z",
    "interrupts_job": True,
    "planned": False,
}
DRAFT = {
    "summary": "GPU 3 of gpu001 fell off the bus",
    "root_cause": "riser card",
    "category": "gpu",
    "timeline": [{"at": "2026-11-23T08:00:00Z", "text": "XID 79"}],
    "action_items": [{"text": "replace risers on rack r0", "owner": "otto", "due": "2026-12-01"}],
}


@pytest.fixture
def incident_id(api, nodes) -> int:  # noqa: ANN001
    return api("erin").post("/api/v1/incidents/", INCIDENT, format="json").json()["id"]


def url(pk: int, action: str = "") -> str:
    return f"/api/v1/incidents/{pk}/postmortem/" + (f"{action}/" if action else "")


def resolve(api, pk: int) -> None:  # noqa: ANN001
    """The incident is over: its postmortem may be approved."""
    done = api("erin").patch(f"/api/v1/incidents/{pk}/", {"status": "resolved"}, format="json")
    assert done.status_code == 200, done.json()


def test_write_submit_and_approve_by_another_engineer(api, incident_id):
    erin, eve = api("erin"), api("eve")
    saved = erin.put(url(incident_id), DRAFT, format="json")
    assert saved.status_code == 200, saved.json()
    assert saved.json()["status"] == "draft" and saved.json()["action_items"][0]["owner"] == "otto"
    assert erin.post(url(incident_id, "submit"), {}, format="json").json()["status"] == "in_review"
    own = erin.post(url(incident_id, "approve"), {}, format="json")
    assert own.status_code == 403  # the author cannot approve their own
    resolve(api, incident_id)
    done = eve.post(url(incident_id, "approve"), {"comment": "clear"}, format="json").json()
    assert (done["status"], done["author"], done["reviewer"]) == ("approved", "erin", "eve")
    assert api("mia").get(url(incident_id)).json()["status"] == "approved"
    notes = list(
        TimelineEntry.objects.filter(incident_id=incident_id, kind="note").values_list(
            "text", flat=True
        )
    )
    assert notes == ["postmortem submitted for review", "postmortem approved: clear"]


def test_reject_sends_it_back_and_only_drafts_are_edited(api, incident_id):
    erin, eve = api("erin"), api("eve")
    erin.put(url(incident_id), DRAFT, format="json")
    erin.post(url(incident_id, "submit"), {}, format="json")
    edit = erin.put(url(incident_id), {**DRAFT, "summary": "x"}, format="json")
    assert edit.status_code == 400 and "status" in edit.json()
    back = eve.post(
        url(incident_id, "reject"), {"comment": "add the timeline"}, format="json"
    ).json()
    assert back["status"] == "draft" and back["review_comment"] == "add the timeline"
    assert (
        erin.put(url(incident_id), {**DRAFT, "summary": "better"}, format="json").status_code == 200
    )


def test_bad_postmortems_and_roles(api, incident_id):
    bad = api("erin").put(
        url(incident_id),
        {**DRAFT, "action_items": [{"text": "x", "owner": "nobody"}]},
        format="json",
    )
    assert bad.status_code == 400 and "action_items[0].owner" in bad.json()
    assert (
        api("erin").put(url(incident_id), {**DRAFT, "category": "nope"}, format="json").status_code
        == 400
    )
    assert not Postmortem.objects.filter(summary=DRAFT["summary"]).exists()
    assert api("otto").put(url(incident_id), DRAFT, format="json").status_code == 403
    assert api("mia").get(url(incident_id)).status_code == 404  # none yet
    assert api("erin").post(url(incident_id, "submit"), {}, format="json").status_code == 404


def test_approval_waits_until_the_incident_is_over(api, incident_id):
    """While the incident is open its cost still grows: approving is 400 naming
    `incident_status`, and works once it is resolved (issue 42)."""
    erin, eve = api("erin"), api("eve")
    erin.put(url(incident_id), DRAFT, format="json")
    erin.post(url(incident_id, "submit"), {}, format="json")
    early = eve.post(url(incident_id, "approve"), {}, format="json")
    assert early.status_code == 400 and "incident_status" in early.json()
    assert "resolved or closed" in str(early.json()["incident_status"])
    assert api("mia").get(url(incident_id)).json()["status"] == "in_review"
    sent_back = eve.post(url(incident_id, "reject"), {"comment": "more"}, format="json")
    assert sent_back.status_code == 200  # sending back needs no end
    erin.post(url(incident_id, "submit"), {}, format="json")
    resolve(api, incident_id)
    assert eve.post(url(incident_id, "approve"), {}, format="json").status_code == 200
