"""Every page, as each role that reads: a form that changes something (POST) is drawn only
for a role that may submit it — the roles of tests/accounts/test_url_roles.py, written out
by hand — so nobody sees inputs they cannot save (issue 18: a manager saw the Health page's
thresholds as editable inputs with no save button)."""

from __future__ import annotations

import datetime as dt
from html.parser import HTMLParser
from urllib.parse import urlsplit

import pytest
from django.urls import resolve
from django.utils import timezone

from apps.fleet.services import node_set_state
from apps.health.models import Thresholds
from apps.incidents.postmortems import ActionSpec, postmortem_save
from apps.incidents.services import incident_open
from apps.maintenance.services import Booking, window_book
from apps.repairs.models import Repair
from apps.repairs.services import repairs_sync
from tests.accounts.test_url_roles import EXPECTED, NOT_PATTERNS

pytestmark = pytest.mark.django_db

CONTROLS = {"input", "select", "textarea", "button"}
# Pages whose own form posts back to them, beyond the url-roles table (which lists their GET):
# the maintenance calendar's booking form, for operators and up.
POSTS_TO_ITSELF = {"maintenance": {"otto", "erin", "root"}}


class Forms(HTMLParser):
    """The POST forms of a page (their actions and every button's formaction), and the
    controls that would send something but sit in no form."""

    def __init__(self, page_path: str) -> None:
        super().__init__()
        self.page_path = page_path
        self.posts: list[str] = []  # URL paths a POST form sends to
        self.orphans: list[str] = []
        self._form: dict[str, str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self._form = a
            if a.get("method", "get").lower() == "post":
                self.posts.append(urlsplit(a.get("action") or self.page_path).path)
        elif tag in CONTROLS:
            if self._form is None:
                kind = a.get("type", "submit" if tag == "button" else "text")
                if kind not in ("hidden", "button"):
                    self.orphans.append(f"<{tag} {a}>")
            elif a.get("formaction") and self._form.get("method", "get").lower() == "post":
                self.posts.append(urlsplit(a["formaction"]).path)

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._form = None


@pytest.fixture
def world(cluster, nodes, job, users):  # noqa: ANN001, ANN201
    """A bit of everything a page can offer to change: an incident with a draft
    postmortem and an action item, a maintenance window, a repair of a drained node,
    thresholds changed by an operator."""
    now = timezone.now()
    incident = incident_open(
        cluster=cluster,
        title="gpu001 fell off the bus",
        category="gpu",
        severity="sev2",
        detected_at=now - dt.timedelta(hours=3),
        job=job,
        nodes=nodes[1:2],
        interrupts_job=True,
    )
    postmortem_save(
        incident=incident,
        by=users["erin"],
        summary="GPU 3 dropped off the bus",
        root_cause="a loose riser",
        category="gpu",
        timeline=[],
        contributing_factors="",
        action_items=[ActionSpec("reseat risers", "erin", None, False)],
    )
    window = window_book(
        booking=Booking(
            cluster=cluster,
            start=now + dt.timedelta(days=1),
            end=now + dt.timedelta(days=1, hours=2),
            reason="firmware",
            nodes=["gpu006"],
            racks=None,
        ),
        by="otto",
    )
    node_set_state(node=nodes[7], state="drained", reason="XID 79", by="otto")
    repairs_sync()
    thresholds, _ = Thresholds.objects.get_or_create(cluster=cluster)
    thresholds.values, thresholds.updated_by = {"heartbeat_s": 240}, "otto"
    thresholds.save()
    return {
        "incident": incident.pk,
        "window": window.pk,
        "repair": Repair.objects.get(node=nodes[7]).pk,
        "job": job.pk,
    }


def _pages(world: dict[str, int]) -> list[str]:
    return [
        "/",
        "/nodes/",
        "/nodes/gpu001/",
        "/nodes/gpu007/",
        "/jobs/",
        f"/jobs/{world['job']}/",
        "/incidents/",
        f"/incidents/{world['incident']}/",
        f"/incidents/{world['incident']}/postmortem/",
        "/action-items/",
        "/alerts/unrouted/",
        "/reliability/",
        "/reports/weekly/",
        "/reports/trends/",
        "/gpus/",
        "/health/",
        "/topology/",
        "/maintenance/",
        f"/maintenance/{world['window']}/",
        "/repairs/",
        f"/repairs/{world['repair']}/",
        "/search/?q=gpu00",
        "/api/docs/",
    ]


@pytest.mark.parametrize("persona", ["mia", "otto", "erin", "root"])
def test_no_role_is_shown_a_form_it_may_not_submit(client, users, world, persona):
    client.force_login(users[persona])
    offered: dict[str, set[str]] = {}
    for url in _pages(world):
        response = client.get(url)
        assert response.status_code == 200, url
        forms = Forms(urlsplit(url).path)
        forms.feed(response.content.decode())
        assert not forms.orphans, f"{url}: controls outside any form {forms.orphans}"
        for path in forms.posts:
            name = resolve(path).url_name
            if name in NOT_PATTERNS or name == "set_language":  # sign out; one's own language
                continue
            offered.setdefault(name, set()).add(url)
            if name == "action-item-done":  # the item's owner or an engineer
                assert persona in ("erin", "root"), url
                continue
            allowed = EXPECTED[name].get("POST") or POSTS_TO_ITSELF[name]
            assert persona in allowed, f"{persona} is offered {name} on {url}"
    if persona == "mia":
        assert not offered, offered  # a manager reads
    else:
        assert "health-thresholds" in offered and "incident-edit" in offered


def test_a_manager_reads_the_thresholds_in_force(client, users, world):
    client.force_login(users["mia"])
    html = client.get("/health/").content.decode()
    section = html.split('id="thresholds"')[1]
    assert "<input" not in section and "Save thresholds" not in section
    assert '<th scope="row">Silent node after (s)</th><td class="r">240' in section
    assert "(changed)" in section and "Operators, engineers and admins change these" in section
    client.force_login(users["otto"])
    section = client.get("/health/").content.decode().split('id="thresholds"')[1]
    assert 'name="heartbeat_s" value="240"' in section and "Save thresholds" in section
