"""The Django admin inside the app's frame, in the words a person uses, with no "Add" for
what only the system writes (issue 42; docs/operations.md, The admin)."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone

from apps.accounts.models import User
from apps.fleet.models import NodeStateChange
from apps.fleet.services.clusters import cluster_automation_set
from apps.incidents.models import Incident

pytestmark = pytest.mark.django_db

# Written by the system, or with a workflow of their own: listed and viewed only.
SYSTEM_WRITTEN = (
    "health/checkresult",
    "health/checkrun",
    "fleet/nodestatechange",
    "fleet/gpu",
    "incidents/incident",
    "incidents/delivery",
    "jobs/job",
    "jobs/checkpoint",
    "accounts/auditevent",
)


def test_the_index_names_models_as_a_person_does(client, users) -> None:  # noqa: ANN001
    client.force_login(users["root"])
    page = client.get("/admin/").content.decode()
    for right in (">GPUs<", ">Deliveries<", ">API tokens<", ">Check results<"):
        assert right in page
    for wrong in ("Deliverys", "Gpus", "Api tokens", "Django administration"):
        assert wrong not in page


@pytest.mark.parametrize("model", SYSTEM_WRITTEN)
def test_no_add_for_what_the_system_writes(client, users, model: str) -> None:  # noqa: ANN001
    client.force_login(users["root"])
    assert client.get(f"/admin/{model}/add/").status_code == 403
    listing = client.get(f"/admin/{model}/").content.decode()
    assert f'href="/admin/{model}/add/"' not in listing
    index = client.get("/admin/").content.decode()
    assert f'href="/admin/{model}/add/"' not in index


def test_incidents_are_filed_on_their_own_page(client, users, cluster) -> None:  # noqa: ANN001
    """The list leads to the app's form (which writes the timeline); one is viewed, not
    edited, here, with a way to its page."""
    incident = Incident.objects.create(
        cluster=cluster, title="NVLink down", category="gpu", severity="sev2",
        detected_at=timezone.now(),
    )  # fmt: skip
    client.force_login(users["root"])
    listing = client.get("/admin/incidents/incident/").content.decode()
    assert 'href="/incidents/new/"' in listing and "File an incident" in listing
    url = f"/admin/incidents/incident/{incident.pk}/change/"
    page = client.get(url).content.decode()
    assert 'name="title"' not in page and "NVLink down" in page
    assert f'href="/incidents/{incident.pk}/"' in page  # "View on site": its own page
    assert client.post(url, {"title": "changed"}).status_code == 403
    incident.refresh_from_db()
    assert incident.title == "NVLink down"


def test_state_history_is_never_edited_or_deleted(client, users, nodes) -> None:  # noqa: ANN001
    change = NodeStateChange.objects.create(node=nodes[0], state="down", at=timezone.now())
    client.force_login(users["root"])
    base = f"/admin/fleet/nodestatechange/{change.pk}"
    assert 'name="reason"' not in client.get(f"{base}/change/").content.decode()
    assert client.post(f"{base}/change/", {"reason": "x"}).status_code == 403
    assert client.post(f"{base}/delete/", {"post": "yes"}).status_code == 403
    assert NodeStateChange.objects.filter(pk=change.pk).exists()


def test_who_paused_automation_is_shown_never_edited(client, users, cluster) -> None:  # noqa: ANN001
    cluster_automation_set(cluster=cluster, paused=True, reason="switch firmware", by="erin")
    client.force_login(users["root"])
    url = f"/admin/fleet/cluster/{cluster.pk}/change/"
    page = client.get(url).content.decode()
    for field in ("automation_by", "automation_at", "automation_paused", "automation_reason"):
        assert f'name="{field}"' not in page
    assert "Automation paused by" in page and "erin" in page and "switch firmware" in page
    form = {
        "name": "c1",
        "gpu_model": "H100",
        "peak_tflops_per_gpu": "989.4",
        "peak_tflops_by_model": "{}",
        "gpus_per_node": "8",
        "actuation": "off",
        "automation_by": "mallory",
        "automation_paused": "",
    }
    assert client.post(url, form).status_code == 302
    cluster.refresh_from_db()
    assert cluster.automation_by == "erin" and cluster.automation_paused


@pytest.mark.parametrize("path", ["add/", "{pk}/change/"])
def test_the_user_form_asks_the_role_first(client, users, path: str) -> None:  # noqa: ANN001
    """Account, then role and an agent's scope, then the password and the rest."""
    client.force_login(users["root"])
    page = client.get(f"/admin/accounts/user/{path.format(pk=users['mia'].pk)}").content.decode()
    order = [
        page.index('name="username"'),
        page.index('name="role"'),
        page.index('name="agent_scope-TOTAL_FORMS"'),
        page.index(">Password</h2>"),
        page.index('name="password1"' if path == "add/" else 'name="is_superuser"'),
    ]
    assert order == sorted(order)


def test_the_user_add_form_sets_the_role(client, users) -> None:  # noqa: ANN001
    client.force_login(users["root"])
    r = client.post(
        "/admin/accounts/user/add/",
        {
            "username": "newbie",
            "role": "operator",
            "usable_password": "false",
            "agent_scope-TOTAL_FORMS": "0",
            "agent_scope-INITIAL_FORMS": "0",
            "agent_scope-MIN_NUM_FORMS": "0",
            "agent_scope-MAX_NUM_FORMS": "1",
        },
    )
    assert r.status_code == 302
    assert User.objects.get(username="newbie").role == "operator"


def test_the_admin_is_inside_the_apps_frame(client, users) -> None:  # noqa: ANN001
    client.force_login(users["root"])
    page = client.get("/admin/").content.decode()
    assert '<header class="top">' in page and "/static/css/app.css" in page
    assert "/static/css/admin.css" in page and 'aria-label="Main"' in page
    assert re.search(r"<title>[^<]*KUAE Ops admin</title>", page)
    assert 'href="/">KUAE&nbsp;Ops</a>' in page and "Back to the dashboard" in page
    assert re.search(r'href="/admin/" aria-current="page">Admin<', page)
    assert "Django site admin" not in page and "Django administration" not in page
