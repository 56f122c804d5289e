"""Filing an incident, writing and reviewing a postmortem, and action items — in the browser
forms (Django test client; the Playwright journey is in tests/e2e)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.incidents.models import ActionItem, Incident, Postmortem, TimelineEntry

pytestmark = pytest.mark.django_db

FILE = {
    "title": "gpu001 fell off the bus",
    "cluster": "c1",
    "category": "gpu",
    "severity": "sev2",
    "occurred_at": "2026-11-23 07:58:00",
    "detected_at": "2026-11-23 08:01:00",
    "localized_at": "",
    "recovered_at": "2026-11-23 08:40:00",
    "nodes": "gpu[000-001],gpu003",
    "description": "XID 79 on GPU 3",
}


def management(prefix: str, total: int) -> dict[str, str]:
    return {
        f"{prefix}-TOTAL_FORMS": str(total),
        f"{prefix}-INITIAL_FORMS": "0",
        f"{prefix}-MIN_NUM_FORMS": "0",
        f"{prefix}-MAX_NUM_FORMS": "1000",
    }


def draft(owner: str, due: dt.date, **extra: str) -> dict[str, str]:
    """The editor's POST: two timeline rows (one blank), two action rows (one blank)."""
    return {
        "summary": "GPU 3 of gpu001 fell off the bus",
        "root_cause": "a loose riser card",
        "category": "gpu",
        "contributing_factors": "no riser inspection after the move",
        **management("tl", 2),
        "tl-0-at": "2026-11-23 07:58:00",
        "tl-0-text": "XID 79",
        "tl-1-at": "",
        "tl-1-text": "",
        **management("ai", 2),
        "ai-0-text": "reseat risers on rack r0",
        "ai-0-owner": owner,
        "ai-0-due": due.isoformat(),
        "ai-1-text": "",
        **extra,
    }


def test_engineer_files_an_incident(client, users, nodes):
    client.force_login(users["otto"])
    assert client.get("/incidents/new/").status_code == 403  # operators do not file
    client.force_login(users["erin"])
    assert 'name="nodes"' in client.get("/incidents/new/").content.decode()
    response = client.post("/incidents/new/", FILE)
    assert response.status_code == 302
    incident = Incident.objects.get(title=FILE["title"])
    assert sorted(incident.nodes.values_list("hostname", flat=True)) == [
        "gpu000",
        "gpu001",
        "gpu003",
    ]
    assert (incident.source, incident.severity, incident.downtime_s) == ("manual", "sev2", 2520)
    assert TimelineEntry.objects.get(incident=incident, kind="opened").actor == "erin"


@pytest.mark.parametrize(
    ("change", "field", "said"),
    [
        ({"recovered_at": "2026-11-23 07:00:00"}, "recovered_at", "is before"),
        ({"nodes": "gpu[000-001],nothere"}, "nodes", "nothere"),
        ({"nodes": "gpu[001-"}, "nodes", "not a hostlist"),
        ({"job": "999999"}, "job", "no job 999999"),
        ({"cluster": "nope"}, "cluster", "Select a valid choice"),
    ],
)
def test_filing_bad_input_says_which_field(client, users, nodes, change, field, said):
    client.force_login(users["erin"])
    response = client.post("/incidents/new/", {**FILE, **change})
    assert response.status_code == 400
    html = response.content.decode()
    assert said in html and f'name="{field}"' in html
    assert not Incident.objects.exists()  # nothing half-written


def test_postmortem_written_submitted_and_approved_in_the_browser(client, users, nodes):
    client.force_login(users["erin"])
    client.post("/incidents/new/", FILE)
    pk = Incident.objects.get().pk
    page = client.get(f"/incidents/{pk}/postmortem/").content.decode()
    assert "Save and submit for review" in page
    assert 'value="occurred"' in page and 'value="recovered"' in page  # the incident's times
    due = timezone.now().date() + dt.timedelta(days=7)
    response = client.post(f"/incidents/{pk}/postmortem/", draft("otto", due))
    assert response.status_code == 302
    postmortem = Postmortem.objects.get(incident_id=pk)
    assert postmortem.status == "draft" and postmortem.root_cause == "a loose riser card"
    assert postmortem.timeline == [{"at": "2026-11-23T07:58:00+00:00", "text": "XID 79"}]
    assert list(postmortem.action_items.values_list("text", "owner__username", "due")) == [
        ("reseat risers on rack r0", "otto", due)
    ]
    client.post(f"/incidents/{pk}/postmortem/", draft("otto", due, then="submit"))
    postmortem.refresh_from_db()
    assert (postmortem.status, postmortem.author.username) == ("in_review", "erin")
    page = client.get(f"/incidents/{pk}/postmortem/").content.decode()
    assert "Approve" not in page and "another engineer than erin" in page
    assert client.post(f"/incidents/{pk}/postmortem/approve/").status_code == 403
    # a draft in review is not edited
    assert client.post(f"/incidents/{pk}/postmortem/", draft("otto", due)).status_code == 403
    client.force_login(users["eve"])
    assert "Approve" in client.get(f"/incidents/{pk}/postmortem/").content.decode()
    client.post(f"/incidents/{pk}/postmortem/reject/", {"comment": "say why the riser moved"})
    postmortem.refresh_from_db()
    assert (postmortem.status, postmortem.review_comment) == ("draft", "say why the riser moved")
    client.force_login(users["erin"])
    client.post(f"/incidents/{pk}/postmortem/", draft("otto", due, then="submit"))
    client.force_login(users["eve"])
    page = client.get(f"/incidents/{pk}/postmortem/").content.decode()
    assert "Not yet approvable: the incident is open" in page  # its cost still grows
    early = client.post(f"/incidents/{pk}/postmortem/approve/", {"comment": "clear"}, follow=True)
    assert "Incident status: the incident is open" in early.content.decode()
    postmortem.refresh_from_db()
    assert postmortem.status == "in_review"
    Incident.objects.filter(pk=pk).update(status="resolved", resolved_at=timezone.now())
    assert "Not yet approvable" not in client.get(f"/incidents/{pk}/postmortem/").content.decode()
    client.post(f"/incidents/{pk}/postmortem/approve/", {"comment": "clear"})
    postmortem.refresh_from_db()
    assert (postmortem.status, postmortem.reviewer.username) == ("approved", "eve")
    notes = TimelineEntry.objects.filter(incident_id=pk, kind="note").values_list("text", flat=True)
    assert "postmortem approved: clear" in list(notes)
    html = client.get(f"/incidents/{pk}/").content.decode()
    assert "Approved" in html and "reseat risers on rack r0" in html


def test_postmortem_editor_bad_rows_are_400_and_nothing_saved(client, users, nodes):
    client.force_login(users["erin"])
    client.post("/incidents/new/", FILE)
    pk = Incident.objects.get().pk
    bad = draft("otto", timezone.now().date(), **{"tl-0-at": "yesterday", "ai-0-owner": "ghost"})
    response = client.post(f"/incidents/{pk}/postmortem/", bad)
    assert response.status_code == 400
    html = response.content.decode()
    assert "Enter a valid date/time" in html and "Select a valid choice" in html
    assert not Postmortem.objects.exists()
    client.force_login(users["mia"])
    assert (
        client.post(
            f"/incidents/{pk}/postmortem/", draft("otto", timezone.now().date())
        ).status_code
        == 403
    )


def test_action_items_overdue_and_ticked_off(client, users, nodes):
    client.force_login(users["erin"])
    client.post("/incidents/new/", FILE)
    pk = Incident.objects.get().pk
    late = timezone.now().date() - dt.timedelta(days=3)
    client.post(f"/incidents/{pk}/postmortem/", draft("otto", late + dt.timedelta(days=10)))
    ActionItem.objects.update(due=late)  # a week and a half later, still not done
    item = ActionItem.objects.get()
    client.force_login(users["mia"])
    assert "1 overdue" in client.get("/incidents/").content.decode()
    html = client.get("/action-items/?state=overdue").content.decode()
    assert "reseat risers on rack r0" in html and "overdue 3" in html
    assert "mark done" not in html  # a manager who does not own it cannot tick it
    assert client.post(f"/action-items/{item.pk}/done/", {"done": "1"}).status_code == 403
    client.force_login(users["otto"])  # the owner can
    response = client.post(
        f"/action-items/{item.pk}/done/", {"done": "1", "next": "https://evil.example/"}
    )
    assert response.status_code == 302 and response["Location"] == "/action-items/"
    item.refresh_from_db()
    assert item.done
    assert "reseat risers" not in client.get("/action-items/?state=overdue").content.decode()
    assert "reseat risers" in client.get("/action-items/?state=done&owner=otto").content.decode()
    assert TimelineEntry.objects.filter(
        incident_id=pk, text__startswith="action item done"
    ).exists()


def test_filing_after_the_fact_and_naming_the_job_by_name(client, users, nodes, job):
    """Issue 18's rough edges: a back-dated incident needs no detection time (it takes the
    failure's), and the job may be named as people know it — name, number or Slurm id."""
    client.force_login(users["erin"])
    week_ago = (timezone.now() - dt.timedelta(days=7)).replace(microsecond=0)
    form = {**FILE, "occurred_at": week_ago.strftime("%Y-%m-%d %H:%M:%S"), "detected_at": ""}
    form.update(localized_at="", recovered_at="", job="llama-70b", interrupts_job="on")
    response = client.post("/incidents/new/", form)
    assert response.status_code == 302, response.content.decode()[:2000]
    incident = Incident.objects.get(title=FILE["title"])
    assert incident.detected_at == week_ago and incident.job_id == job.pk


def test_a_new_action_item_due_in_the_past_is_refused(client, users, nodes):
    client.force_login(users["erin"])
    client.post("/incidents/new/", FILE)
    pk = Incident.objects.get().pk
    yesterday = timezone.now().date() - dt.timedelta(days=1)
    response = client.post(f"/incidents/{pk}/postmortem/", draft("otto", yesterday))
    assert response.status_code == 400 and "is in the past" in response.content.decode()
    assert not Postmortem.objects.filter(incident_id=pk, action_items__isnull=False).exists()
    # the refusal is summarised at the top of the form, linking the refused field (issue 32.5)
    html = response.content.decode()
    summary = html[html.index('class="error-summary') :]
    summary = summary[: summary.index("</div>")]
    assert "Not saved: 1 thing to fix" in summary
    assert '<a href="#id_ai-0-due">Action item 1, due' in summary and "is in the past" in summary
    assert html.index('class="error-summary') < html.index('name="summary"')  # above the form
