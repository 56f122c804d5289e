"""One rule for what an operator may change on an incident, applied by the API and the page."""

from __future__ import annotations

import pytest
from django.utils import timezone

from apps.incidents.models import Incident
from apps.incidents.policy import OPERATOR_FIELDS, change_refusal, status_choices
from apps.incidents.services import incident_open

pytestmark = pytest.mark.django_db


def test_the_rule():
    assert change_refusal(engineer=True, changes={"severity": "sev1", "status": "closed"}) is None
    assert (
        change_refusal(engineer=False, changes={"status": "mitigated", "recovered_at": 1}) is None
    )
    assert "severity" in change_refusal(engineer=False, changes={"severity": "sev1"})
    assert "status resolved" in change_refusal(engineer=False, changes={"status": "resolved"})
    assert [v for v, _ in status_choices(engineer=False)] == ["investigating", "mitigated"]
    assert "recovered_at" in OPERATOR_FIELDS and "category" not in OPERATOR_FIELDS


@pytest.mark.parametrize(
    ("changes", "allowed"),
    [
        ({"status": "investigating"}, True),
        ({"status": "resolved"}, False),
        ({"severity": "sev1"}, False),
    ],
)
def test_the_api_and_the_page_agree(api, client, users, cluster, changes, allowed):
    incident = incident_open(
        cluster=cluster, title="t", category="gpu", severity="sev3", detected_at=timezone.now()
    )
    response = api("otto").patch(f"/api/v1/incidents/{incident.pk}/", changes, format="json")
    assert (response.status_code == 200) is allowed
    incident.refresh_from_db()
    by_api = {k: getattr(incident, k) for k in changes}
    Incident.objects.filter(pk=incident.pk).update(status="open", severity="sev3")
    client.force_login(users["otto"])
    form = {"detected_at": incident.detected_at.strftime("%Y-%m-%d %H:%M:%S"), "status": "open"}
    client.post(f"/incidents/{incident.pk}/edit/", {**form, **changes})
    incident.refresh_from_db()
    assert {k: getattr(incident, k) for k in changes} == by_api
    assert (by_api == changes) is allowed
