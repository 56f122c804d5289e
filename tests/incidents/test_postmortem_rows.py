"""The postmortem editor's Add buttons: without JavaScript they submit `add_row` and the
editor comes back as typed with one more row, nothing saved and nothing judged yet; the
script (static/js/formset.js) adds rows from the formset's empty form instead (its browser
test is tests/e2e/test_postmortem_rows.py)."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.utils import timezone

from apps.incidents.models import ActionItem, Incident, Postmortem
from apps.incidents.postmortems import ActionSpec, postmortem_save
from apps.incidents.services import incident_open
from tests.incidents.test_postmortem_pages import draft, management

pytestmark = pytest.mark.django_db


@pytest.fixture
def incident(cluster, nodes) -> Incident:  # noqa: ANN001
    return incident_open(
        cluster=cluster,
        title="gpu001 fell off the bus",
        category="gpu",
        severity="sev2",
        detected_at=timezone.now() - dt.timedelta(hours=2),
        nodes=nodes[1:2],
    )


def _rows(html: str, prefix: str) -> int:
    """The editor's rows of formset `prefix` (its empty form's template excluded)."""
    body = html.split(f'id="{prefix}-rows">')[1].split("</tbody>")[0]
    return body.count("<tr")


def _total(html: str, prefix: str) -> str:
    return re.search(rf'name="{prefix}-TOTAL_FORMS" value="(\d+)"', html)[1]


def test_the_editor_offers_add_buttons_and_the_empty_rows_for_the_script(client, users, incident):
    client.force_login(users["erin"])
    html = client.get(f"/incidents/{incident.pk}/postmortem/").content.decode()
    assert 'name="add_row" value="ai"' in html and "Add action item" in html
    assert 'name="add_row" value="tl"' in html and "Add timeline entry" in html
    template = html.split('<template id="ai-empty-row">')[1].split("</template>")[0]
    assert 'name="ai-__prefix__-text"' in template and 'aria-label="Text, new row"' in template
    assert '<script src="/static/js/formset.js" defer></script>' in html
    assert (_rows(html, "ai"), _total(html, "ai")) == (2, "2")  # two blank rows to start
    client.force_login(users["mia"])  # a reader sees no editor, no script
    html = client.get(f"/incidents/{incident.pk}/postmortem/").content.decode()
    assert "formset.js" not in html and "add_row" not in html


def test_add_row_without_javascript_keeps_what_was_typed_and_saves_nothing(client, users, incident):
    client.force_login(users["erin"])
    due = timezone.now().date() + dt.timedelta(days=3)
    typed = draft("otto", due, **{"ai-1-text": "a second item, owner not chosen yet"})
    response = client.post(f"/incidents/{incident.pk}/postmortem/", {**typed, "add_row": "ai"})
    assert response.status_code == 200
    html = response.content.decode()
    assert (_rows(html, "ai"), _total(html, "ai")) == (3, "3")
    assert _total(html, "tl") == "2"  # the other formset is as it was
    assert 'value="reseat risers on rack r0"' in html
    assert 'value="a second item, owner not chosen yet"' in html
    assert 'aria-label="Text, row 3"' in html  # the new row, labelled by its number
    assert "This field is required" not in html and "Fix the fields" not in html
    assert not Postmortem.objects.filter(incident=incident).exists()

    response = client.post(f"/incidents/{incident.pk}/postmortem/", {**typed, "add_row": "tl"})
    assert response.status_code == 200 and _total(response.content.decode(), "tl") == "3"

    # Fill the added row, then save: three items.
    saved = {
        **typed,
        **management("ai", 3),
        "ai-1-owner": "erin",
        "ai-2-text": "add a riser check to the move checklist",
        "ai-2-owner": "erin",
        "ai-2-due": due.isoformat(),
    }
    response = client.post(f"/incidents/{incident.pk}/postmortem/", saved)
    assert response.status_code == 302
    texts = ActionItem.objects.filter(postmortem__incident=incident).values_list("text", flat=True)
    assert sorted(texts) == [
        "a second item, owner not chosen yet",
        "add a riser check to the move checklist",
        "reseat risers on rack r0",
    ]


def test_add_row_stops_at_the_most_rows_and_refuses_a_count_that_is_not_one(
    client, users, incident
):
    client.force_login(users["erin"])
    due = timezone.now().date() + dt.timedelta(days=3)
    full = {**draft("otto", due), **management("ai", 200), "add_row": "ai"}
    response = client.post(f"/incidents/{incident.pk}/postmortem/", full)
    assert response.status_code == 200 and _total(response.content.decode(), "ai") == "200"
    bad = {**draft("otto", due), "ai-TOTAL_FORMS": "lots", "add_row": "ai"}
    response = client.post(f"/incidents/{incident.pk}/postmortem/", bad)
    assert response.status_code == 400
    assert "Action items: ManagementForm data is missing" in response.content.decode()
    assert not Postmortem.objects.filter(incident=incident).exists()


def test_an_action_item_already_overdue_is_kept_when_the_draft_is_saved_again(
    client, users, incident
):
    """Only a new or moved due date must not be in the past: the editor reads the saved rows
    as the formset's initial, so saving a draft whose item became overdue still works."""
    last_week = timezone.now().date() - dt.timedelta(days=7)
    postmortem_save(
        incident=incident,
        by=users["erin"],
        summary="s",
        root_cause="r",
        category="gpu",
        timeline=[],
        contributing_factors="",
        action_items=[ActionSpec("reseat risers on rack r0", "otto", last_week, False)],
    )
    client.force_login(users["erin"])
    form = {**draft("otto", last_week), "ai-INITIAL_FORMS": "1", "summary": "now clearer"}
    response = client.post(f"/incidents/{incident.pk}/postmortem/", form)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Postmortem.objects.get(incident=incident).summary == "now clearer"
    moved = {**form, "ai-0-due": (last_week - dt.timedelta(days=1)).isoformat()}
    response = client.post(f"/incidents/{incident.pk}/postmortem/", moved)
    assert response.status_code == 400 and "is in the past" in response.content.decode()
