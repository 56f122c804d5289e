"""Words a person uses (issue 18, item 5): every page of a simulated cluster shows category
labels, never their slugs, and no reference to an internal design document; thresholds
are labelled in words; errors name fields as the form does."""

from __future__ import annotations

import datetime as dt
import re
from html.parser import HTMLParser

import pytest
from django.forms.utils import pretty_name
from django.utils import timezone

from apps.common.errors import errors_text, plain_message
from apps.common.weeks import week_label, week_start
from apps.health.limits import FIELDS
from apps.incidents.choices import Category, category_label
from apps.incidents.models import Incident
from apps.jobs.models import Job
from tests.common.test_docs_citations import FOREIGN_DOCUMENTS
from tests.reports.tables import tables
from tests.support import simulate

pytestmark = pytest.mark.django_db
# Slugs that are also the label's words would not tell anything: only those with "_".
SLUGS = {c.value for c in Category if "_" in c.value}
DOCUMENT_REFERENCES = FOREIGN_DOCUMENTS  # no page names a document a reader does not have


class _Text(HTMLParser):
    """The text a reader sees (and the charts' JSON in <script>), without attributes: a
    slug in `value="…"` or a query string is for the machine."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def visible(body: str) -> str:
    parser = _Text()
    parser.feed(body)
    return " ".join(parser.parts)


@pytest.fixture(scope="module")
def simulated(module_rows) -> None:  # noqa: ANN001
    """The simulated cluster, written once for the module (tests/conftest.py)."""
    module_rows(simulate, gpus=512, days=16, seed=4, failure_rate=0.05)


@pytest.fixture
def sim(db, simulated) -> None:  # noqa: ANN001
    """Each test reads it inside its own transaction."""


def pages() -> list[str]:
    """Every page a reader opens, with objects of the simulated cluster."""
    week = week_label(week_start(timezone.now()) - dt.timedelta(weeks=1))
    incident = Incident.objects.order_by("-lost_gpu_hours").first()
    job = Job.objects.get(external_id="sim-0")
    assert incident is not None
    return [
        "/",
        "/nodes/",
        "/nodes/r000n00/",
        "/jobs/",
        f"/jobs/{job.pk}/",
        "/incidents/",
        f"/incidents/{incident.pk}/",
        "/incidents/new/",
        f"/incidents/{incident.pk}/postmortem/",
        "/action-items/",
        "/alerts/unrouted/",
        "/reliability/",
        f"/reports/weekly/?week={week}",
        "/reports/trends/",
        "/health/",
        "/maintenance/",
        "/api/docs/",
        "/api/v1/schema/",
    ]


def test_every_page_shows_labels_and_no_document_reference(client, users, sim):
    client.force_login(users["erin"])  # an engineer sees every page, the filing form too
    for url in pages():
        response = client.get(url)
        assert response.status_code == 200, url
        body = response.content.decode()
        text = visible(body) if response["Content-Type"].startswith("text/html") else body
        shown = SLUGS & set(re.findall(r"\b[a-z0-9]+(?:_[a-z0-9]+)+\b", text))
        if not url.startswith("/api/v1/schema"):  # the schema lists the slugs: they are the API's
            assert not shown, f"{url} shows slugs {sorted(shown)}"
        found = DOCUMENT_REFERENCES.search(body)
        assert found is None, f"{url}: {body[max(0, found.start() - 60) : found.end() + 40]}"


def test_pareto_weekly_table_and_csv_use_labels(client, users, sim):
    client.force_login(users["mia"])
    week = week_label(week_start(timezone.now()) - dt.timedelta(weeks=1))
    reliability = client.get("/reliability/").content.decode()
    top = Incident.objects.filter(planned=False).values_list("category", flat=True)
    labels = {category_label(c) for c in top}
    assert any(f'"{label}"' in reliability for label in labels)  # the Pareto's bars
    weekly = client.get(f"/reports/weekly/?week={week}").content.decode()
    files = tables(client.get(f"/reports/weekly.zip?week={week}").content)
    shown = {r["category_label"] for r in files["incidents"]}
    assert shown and shown <= {c.label for c in Category}
    assert all(f">{label}</td>" in weekly for label in shown)
    for row in files["incidents"] + files["categories"]:  # the slug beside its label
        assert category_label(row["category"]) == row["category_label"]


def test_category_label() -> None:
    assert category_label("network_switch_cable") == Category.NETWORK_SWITCH_CABLE.label
    assert category_label("host_maintenance") == "Host maintenance"
    assert category_label("retired_cause") == "Retired cause"  # a slug no longer listed


def test_threshold_labels_are_words() -> None:
    for f in FIELDS:
        label = f.metadata["label"]
        assert label != pretty_name(f.name) and "_" not in label, f.name


def test_errors_name_fields_as_the_form_does(client, users, cluster) -> None:
    labels = {"detected_at": "Detected", "recovered_at": "Recovered"}
    assert plain_message("is before detected_at", labels) == "is before Detected"
    assert plain_message("unknown category 'gpu_hbm'", labels) == "unknown category 'gpu_hbm'"
    assert errors_text({"recovered_at": ["is before localized_at"]}) == (
        "Recovered at: is before Localised at"
    )
    client.force_login(users["erin"])
    now = timezone.now().replace(microsecond=0)
    response = client.post(
        "/incidents/new/",
        {
            "title": "PSU swap",
            "cluster": cluster.name,
            "category": "power_supply",
            "severity": "sev3",
            "detected_at": now.strftime("%Y-%m-%d %H:%M:%S"),
            "recovered_at": (now - dt.timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S"),
        },
    )
    body = response.content.decode()
    assert response.status_code == 400
    assert "is before Detected at" in body and "detected_at" not in visible(body)
