"""The demo signs in as an operator; the other roles' logins are on its sign-in page only;
two engineers, so one reviews the postmortem the other wrote without the admin."""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path

from django.core.management import call_command
from django.utils import timezone

from apps.accounts.models import User
from apps.fleet.models import Cluster
from apps.incidents.choices import IncidentStatus
from apps.incidents.postmortems import postmortem_approve, postmortem_save, postmortem_submit
from apps.incidents.services import incident_open


def test_demo_logins_operator_first_and_listed_on_the_demo_sign_in(client, db, settings) -> None:  # noqa: ANN001
    settings.DEMO = True
    call_command("demo_setup", gpus=16, days=1)
    roles = dict(User.objects.filter(username__startswith="demo").values_list("username", "role"))
    assert roles == {
        "demo": "operator",
        "demo-manager": "manager",
        "demo-engineer": "engineer",
        "demo-reviewer": "engineer",
        "demo-admin": "admin",
    }
    page = client.get("/login/").content.decode()
    assert "demo-manager" in page and "demo-engineer" in page and "demo-admin" in page
    assert "demo-reviewer" in page
    assert client.login(username="demo", password="demo")


def test_no_demo_logins_outside_the_demo(client, db, settings) -> None:  # noqa: ANN001
    settings.DEMO = False
    assert "demo-manager" not in client.get("/login/").content.decode()


def test_a_demo_engineer_s_postmortem_is_approved_by_the_other(db, settings) -> None:  # noqa: ANN001
    settings.DEMO = True
    out = io.StringIO()
    call_command("demo_setup", gpus=16, days=1, stdout=out, stderr=io.StringIO())
    assert "demo-engineer writes, demo-reviewer reviews" in out.getvalue()
    banner = Path(settings.BASE_DIR, "Makefile").read_text()
    assert "demo-engineer and demo-reviewer / demo" in banner  # `make run` says so too
    author, reviewer = (User.objects.get(username=u) for u in ("demo-engineer", "demo-reviewer"))
    now = timezone.now()
    incident = incident_open(  # over: a postmortem is approved only then
        cluster=Cluster.objects.get(name="kuae-sim"),
        title="GPU fell off the bus",
        category="gpu",
        severity="sev2",
        detected_at=now - dt.timedelta(hours=2),
        resolved_at=now - dt.timedelta(hours=1),
        status=IncidentStatus.RESOLVED,
    )
    postmortem = postmortem_save(
        incident=incident,
        by=author,
        summary="A GPU fell off the bus.",
        root_cause="XID 79",
        category=incident.category,
        timeline=[],
        contributing_factors="",
        action_items=[],
    )
    postmortem = postmortem_submit(postmortem=postmortem, by=author)
    approved = postmortem_approve(postmortem=postmortem, by=reviewer)
    assert (approved.status, approved.author, approved.reviewer) == ("approved", author, reviewer)
