"""Counted nouns and one spelling on the pages (issue 42): "1 rack", never "1 racks" or
"run(s)"; "Localised", as the rest of the pages spell it, never "Localized"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.utils import timezone

from apps.common.words import counted
from apps.fleet.models import Node
from apps.jobs.services import job_create

ROOT = Path(__file__).resolve().parent.parent.parent


def test_counted_takes_the_number_the_noun_needs():
    assert counted(1, "rack") == "1 rack" and counted(2, "rack") == "2 racks"
    assert counted(0, "failure") == "0 failures" and counted(1, "failure") == "1 failure"
    assert counted(1200, "check run") == "1,200 check runs"
    assert counted(1, "XID/ECC event") == "1 XID/ECC event"


def test_no_template_or_message_hedges_a_plural():
    """Nothing on a page says "run(s)": templates use `pluralize`, Python `counted`."""
    hedged = re.compile(r"(?<![.\w])[a-z]+\(s\)")  # "run(s)", not a call such as .append(s)
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for folder in ("templates", "apps")
        for path in (ROOT / folder).rglob("*")
        if path.suffix in (".html", ".py", ".js")
        and "migrations" not in path.parts
        and path.name != "words.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if hedged.search(line.replace("http(s)", ""))
        and "Alertmanager(s)" not in line
        and "node(s) keep their state" not in line  # a log line, not on a page
    ]
    assert found == []


def test_no_page_writes_localized():
    """One spelling on the pages: the API field is `localized_at` (docs/api.md's), its word
    on a page "Localised"."""
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in (ROOT / "templates").rglob("*.html")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"[Ll]ocalized(?!_at)", line)
    ]
    assert found == []


@pytest.mark.django_db
def test_overview_counts_one_rack(client, users, nodes: list[Node]) -> None:  # noqa: ANN001
    Node.objects.filter(rack="r1").update(rack="r0")  # one rack
    client.force_login(users["mia"])
    page = client.get("/?cluster=c1").content.decode()
    assert "64 GPUs in 1 rack<" in page and "1 racks" not in page


@pytest.mark.django_db
def test_incident_form_says_localised(client, users, nodes: list[Node]) -> None:  # noqa: ANN001
    client.force_login(users["erin"])
    page = client.get("/incidents/new/").content.decode()
    assert "Localised at" in page and "Localized" not in page
    now = timezone.now()
    bad = client.post(
        "/incidents/new/",
        {
            "title": "x",
            "cluster": "c1",
            "category": "gpu",
            "severity": "sev3",
            "detected_at": now.strftime("%Y-%m-%d %H:%M:%S"),
            "localized_at": (now - timezone.timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S"),
        },
    ).content.decode()
    assert "Localised at" in bad and "Localized" not in bad


@pytest.mark.django_db
def test_a_job_on_one_node_says_one_node(client, users, nodes: list[Node]) -> None:  # noqa: ANN001
    created, _ = job_create(
        cluster=nodes[0].cluster, nodes=nodes[:1], name="small", gpu_count=8, status="running"
    )
    client.force_login(users["mia"])
    page = client.get(f"/jobs/{created.pk}/").content.decode()
    assert "8 on 1 node<" in page and "1 nodes" not in page
