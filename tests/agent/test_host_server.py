"""docs/agent.md, Host readings, and docs/integrations.md, Host readings: what the agent reads
from a node's kernel is what the server takes — every item of a real read of a fake tree
is accepted by `POST ingest/telemetry/` and stored under its kind and subject."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.utils import timezone

from apps.fleet.models import Cluster
from apps.fleet.services.nodes import NodeSpec, nodes_register
from apps.telemetry.host_kinds import HOST_KINDS
from apps.telemetry.models import HostReading
from tests.agent.test_host import _reader, trees  # noqa: F401 - the fake tree's fixture

pytestmark = pytest.mark.django_db


def test_the_agents_host_readings_are_all_taken_by_the_server(api, cluster: Cluster, trees):  # noqa: F811
    nodes_register(cluster=cluster, specs=[NodeSpec(hostname="gpu-a017", rack="r0")])
    at = timezone.now().replace(microsecond=0) - dt.timedelta(seconds=5)
    items = json.loads(json.dumps(_reader(trees).read(node="gpu-a017", ts=at), default=str))
    kinds = {i["kind"] for i in items}
    assert kinds == set(HOST_KINDS)  # the fake tree has every kind the agent reads

    r = api("ada").post("/api/v1/ingest/telemetry/", {"host": items}, format="json")

    assert r.status_code == 202, r.content
    body = r.json()
    assert body["host"] == len(items) and body["host_stale"] == 0
    stored = {
        (kind, subject): values
        for kind, subject, values in HostReading.objects.values_list("kind", "subject", "values")
    }
    assert len(stored) == len(items)
    for item in items:
        values = stored[(item["kind"], item["subject"])]
        assert set(values) == set(item["values"]), item
    assert stored[("pcie", "0000:3d:00.0")]["link_width"] == 8  # trained down, as read
    assert stored[("memory", "mc1")]["ue_total"] == 1
    assert stored[("clock", "system")]["synced"] == 1
