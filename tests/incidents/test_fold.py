"""`incident_fold`: what a check's later sighting of an open incident's fault writes
(docs/checks.md, Storms) — the nodes it newly names, its details merged, `localized_at`
the first time the fault is placed — in one UPDATE of the row and no timeline line."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.fleet.models import Cluster, Node
from apps.incidents.models import Incident
from apps.incidents.services import incident_fold, incident_open

pytestmark = pytest.mark.django_db


def _open(cluster: Cluster, nodes: list[Node]) -> Incident:
    return incident_open(
        cluster=cluster,
        title="XID 79 on gpu001",
        category="gpu",
        severity="sev2",
        detected_at=timezone.now() - dt.timedelta(minutes=5),
        nodes=nodes[:1],
        source="health",
        details={"verdict": "rank 3 stalled", "xid_counts": {"gpu:a/3": {"79": 50}}},
        actor="check:gpu_errors",
    )


def test_it_links_merges_and_localises_once(cluster, nodes):
    incident = _open(cluster, nodes)
    entries = incident.timeline.count()
    first = timezone.now()
    incident_fold(
        incident=incident,
        nodes=nodes[:2],
        details={"xid_counts": {"gpu:a/3": {"79": 80}}},
        localized_at=first,
    )
    incident_fold(incident=incident, localized_at=first + dt.timedelta(minutes=1))
    stored = Incident.objects.get(pk=incident.pk)
    assert sorted(n.hostname for n in stored.nodes.all()) == sorted(n.hostname for n in nodes[:2])
    assert stored.details == {"verdict": "rank 3 stalled", "xid_counts": {"gpu:a/3": {"79": 80}}}
    assert stored.localized_at == first  # the first placing stays
    assert (stored.details, stored.localized_at) == (incident.details, incident.localized_at)
    assert incident.timeline.count() == entries  # the caller notes what it means


def test_it_writes_the_row_once_and_nothing_when_given_nothing(cluster, nodes):
    incident = _open(cluster, nodes)
    with CaptureQueriesContext(connection) as queries:
        incident_fold(incident=incident, details={"verdict": "x"}, localized_at=timezone.now())
    updates = [q["sql"] for q in queries if q["sql"].startswith("UPDATE")]
    assert len(updates) == 1, updates
    with CaptureQueriesContext(connection) as queries:
        incident_fold(incident=incident, details={}, localized_at=None)
    assert len(queries) == 0
