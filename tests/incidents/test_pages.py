"""Incident pages: the list (filters, sort by cost) and an incident's page."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone

from apps.incidents.models import Incident
from apps.incidents.services import incident_open
from tests.support import simulate

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def simulated(module_rows) -> None:  # noqa: ANN001
    """The simulated cluster, written once for the module (tests/conftest.py)."""
    module_rows(simulate, gpus=1024, days=14, seed=2, failure_rate=0.03)


@pytest.fixture
def sim(db, simulated) -> None:  # noqa: ANN001
    """Each test reads it inside its own transaction."""


def test_incident_list_sorts_by_cost(client, users, sim, django_assert_max_num_queries):
    client.force_login(users["mia"])
    with django_assert_max_num_queries(12):
        html = client.get("/incidents/?sort=-cost").content.decode()
    ids = [int(x) for x in re.findall(r'<td class="r"><a href="/incidents/(\d+)/">', html)]
    costs = dict(Incident.objects.values_list("pk", "lost_gpu_hours"))
    assert len(ids) > 10 and [costs[i] for i in ids] == sorted(
        (costs[i] for i in ids), reverse=True
    )
    sev1 = client.get("/incidents/?severity=sev1").content.decode()
    assert "SEV2" not in sev1.split("<tbody>")[1]


def test_incident_page(client, users, sim, django_assert_max_num_queries):
    client.force_login(users["mia"])
    incident = Incident.objects.filter(interrupts_job=True, recovered_at__isnull=False).first()
    with django_assert_max_num_queries(12):
        html = client.get(f"/incidents/{incident.pk}/").content.decode()
    assert incident.title in html and "Lost GPU-hours" in html and "recovered" in html
    assert "Opened" in html  # the timeline's first line
    assert client.get("/incidents/999999/").status_code == 404


def test_edit_and_comment_in_the_browser(client, users, api, nodes):
    pk = (
        api("erin")
        .post(
            "/api/v1/incidents/",
            {
                "title": "XID 79",
                "cluster": "c1",
                "category": "gpu",
                "severity": "sev3",
                "detected_at": "2026-11-23T08:01:00Z",
                "interrupts_job": False,
                "planned": False,
            },
            format="json",
        )
        .json()["id"]
    )
    form = {
        "status": "mitigated",
        "severity": "sev2",
        "category": "gpu_hbm",
        "detected_at": "2026-11-23 08:01:00",
        "localized_at": "2026-11-23 08:10:00",
        "occurred_at": "",
        "recovered_at": "",
        "resolved_at": "",
        "description": "HBM",
    }
    client.force_login(users["mia"])
    assert "incident-edit" not in client.get(f"/incidents/{pk}/").content.decode()
    assert f"/incidents/{pk}/edit/" not in client.get(f"/incidents/{pk}/").content.decode()
    assert client.post(f"/incidents/{pk}/edit/", form).status_code == 403
    client.force_login(users["eve"])
    page = client.get(f"/incidents/{pk}/").content.decode()
    assert f'action="/incidents/{pk}/edit/"' in page and 'name="severity"' in page
    assert client.post(f"/incidents/{pk}/edit/", form).status_code == 302
    incident = Incident.objects.get(pk=pk)
    assert (incident.status, incident.severity, incident.category) == (
        "mitigated",
        "sev2",
        "gpu_hbm",
    )
    client.force_login(users["otto"])
    page = client.get(f"/incidents/{pk}/").content.decode()
    assert 'name="status"' in page and 'name="severity"' not in page  # operators: times, status
    client.post(f"/incidents/{pk}/edit/", {**form, "status": "investigating", "severity": "sev1"})
    incident.refresh_from_db()
    assert (
        incident.status == "investigating" and incident.severity == "sev2"
    )  # operators: no severity
    client.post(f"/incidents/{pk}/comment/", {"text": "swapping the GPU"})
    html = client.get(f"/incidents/{pk}/").content.decode()
    assert "swapping the GPU" in html and "severity: sev3 → sev2" in html and "by eve" in html
    bad = client.post(
        f"/incidents/{pk}/edit/",
        {**form, "status": "investigating", "localized_at": "2026-11-23 07:00:00"},
        follow=True,
    )
    assert "localized_at" in bad.content.decode()  # before detection: refused, said why


@pytest.mark.parametrize(
    ("category", "word"), [("hang", "hung"), ("gpu", "interrupted")], ids=["hang", "gpu"]
)
def test_an_incident_calls_its_job_what_the_job_page_does(
    client, users, cluster, job, category, word
):
    """A hang incident's job is hung (as its page says: Running / Hung), not "interrupted";
    once over, it was."""
    now = timezone.now()
    incident = incident_open(
        cluster=cluster,
        title="stuck",
        category=category,
        severity="sev1",
        detected_at=now,
        job=job,
        interrupts_job=True,
        actor="otto",
    )
    client.force_login(users["mia"])
    html = client.get(f"/incidents/{incident.pk}/").content.decode()
    assert f'id="job-word">({word})<' in html
    if word == "hung":
        assert "(interrupted)" not in html
    Incident.objects.filter(pk=incident.pk).update(status="resolved", recovered_at=now)
    html = client.get(f"/incidents/{incident.pk}/").content.decode()
    assert f'id="job-word">(was {word})<' in html
