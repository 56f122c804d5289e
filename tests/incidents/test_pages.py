"""Incident pages: the list (filters, sort by cost) and an incident's page."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import call_command

from apps.incidents.models import Incident

pytestmark = pytest.mark.django_db


@pytest.fixture
def sim(db):  # noqa: ANN001, ANN201
    call_command(
        "simulate",
        gpus=1024,
        days=14,
        seed=2,
        failure_rate=0.03,
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )


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
