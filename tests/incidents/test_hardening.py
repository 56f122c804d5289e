"""Incidents hardening (issue 16, item 4): the postmortem's two-person rule and a page that
a newline in a title could stop. Each test is an attack that worked before."""

from __future__ import annotations

import pytest
from django.core import mail
from django.utils import timezone

from apps.incidents.models import Delivery, Postmortem
from apps.incidents.tasks import delivery_send_task
from tests.incidents.test_postmortems import DRAFT, INCIDENT, resolve, url

pytestmark = pytest.mark.django_db


@pytest.fixture
def incident_id(api, nodes) -> int:  # noqa: ANN001
    return api("erin").post("/api/v1/incidents/", INCIDENT, format="json").json()["id"]


def _step(api, name: str, pk: int, step: str) -> int:  # noqa: ANN001
    return api(name).post(url(pk, step), {}, format="json").status_code


def test_who_submits_does_not_become_the_author(api, incident_id):
    # erin writes it; eve clicks submit — before, eve became "the author" and erin
    # approved her own text.
    assert api("erin").put(url(incident_id), DRAFT, format="json").status_code == 200
    assert _step(api, "eve", incident_id, "submit") == 200
    assert api("mia").get(url(incident_id)).json()["author"] == "erin"
    assert _step(api, "erin", incident_id, "approve") == 403
    assert _step(api, "erin", incident_id, "reject") == 403
    resolve(api, incident_id)
    assert _step(api, "eve", incident_id, "approve") == 200  # eve wrote none of it


def test_whoever_edits_the_content_becomes_its_author_and_cannot_review(api, incident_id):
    api("erin").put(url(incident_id), DRAFT, format="json")
    edited = api("eve").put(url(incident_id), {**DRAFT, "summary": "a riser"}, format="json")
    assert edited.json()["author"] == "eve"
    assert _step(api, "erin", incident_id, "submit") == 200
    # Neither of its writers reviews it: the last editor, nor the one who wrote the rest.
    assert _step(api, "eve", incident_id, "approve") == 403
    assert _step(api, "erin", incident_id, "approve") == 403
    resolve(api, incident_id)
    assert _step(api, "root", incident_id, "approve") == 200
    postmortem = Postmortem.objects.get(incident_id=incident_id)
    assert (postmortem.author.username, postmortem.reviewer.username) == ("eve", "root")
    assert set(postmortem.editors.values_list("username", flat=True)) == {"erin", "eve"}


def test_saving_the_same_text_is_no_authorship(api, incident_id):
    api("erin").put(url(incident_id), DRAFT, format="json")
    same = api("eve").put(url(incident_id), DRAFT, format="json")  # unchanged: no edit
    assert same.json()["author"] == "erin"
    assert _step(api, "eve", incident_id, "submit") == 200
    resolve(api, incident_id)
    assert _step(api, "eve", incident_id, "approve") == 200


def test_a_postmortem_nobody_wrote_here_is_not_submitted(api, incident_id):
    # A draft from before authorship was kept (no author): someone saves it first.
    Postmortem.objects.create(incident_id=incident_id, summary="written long ago")
    response = api("eve").post(url(incident_id, "submit"), {}, format="json")
    assert response.status_code == 400 and "status" in response.json()
    api("erin").put(url(incident_id), DRAFT, format="json")
    assert _step(api, "eve", incident_id, "submit") == 200


def test_the_page_offers_review_only_to_someone_who_wrote_none_of_it(client, api, users, nodes):
    pk = api("erin").post("/api/v1/incidents/", INCIDENT, format="json").json()["id"]
    api("erin").put(url(pk), DRAFT, format="json")
    api("eve").put(url(pk), {**DRAFT, "summary": "a riser"}, format="json")
    _step(api, "eve", pk, "submit")
    for name, offered in (("erin", False), ("eve", False), ("root", True)):
        client.force_login(users[name])
        page = client.get(f"/incidents/{pk}/postmortem/").content.decode()
        assert ("Approve" in page) is offered, name
    client.force_login(users["erin"])
    assert client.post(f"/incidents/{pk}/postmortem/approve/").status_code == 403


def test_a_newline_in_a_sev1_title_still_pages(
    api, nodes, settings, django_capture_on_commit_callbacks
):
    settings.KUAE_NOTIFY_EMAILS, settings.KUAE_NOTIFY_WEBHOOK = ["oncall@example.com"], ""
    body = {
        **INCIDENT,
        "severity": "sev1",
        "title": "XID 79 on gpu001\nBcc: everyone@example.com\r\nX-Evil: 1",
        "detected_at": timezone.now().isoformat(),
    }
    with django_capture_on_commit_callbacks(execute=False):
        pk = api("erin").post("/api/v1/incidents/", body, format="json").json()["id"]
    (delivery,) = Delivery.objects.filter(incident_id=pk)
    assert delivery_send_task(delivery.pk) is True  # not a BadHeaderError
    (message,) = mail.outbox
    assert message.subject == "[SEV1] XID 79 on gpu001 Bcc: everyone@example.com X-Evil: 1"
    assert message.to == ["oncall@example.com"] and not message.bcc
    assert "X-Evil" not in message.message().as_string().split("\n\n")[0].replace(
        message.subject, ""
    )
