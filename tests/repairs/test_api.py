"""`GET repairs/`, `GET/PATCH repairs/{id}/` (engineers edit), roles and 400s naming the
field (docs/repairs.md)."""

from __future__ import annotations

import json

import pytest
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer

from apps.repairs.models import Repair
from apps.repairs.services import repairs_sync
from tests.repairs.conftest import drain

pytestmark = pytest.mark.django_db


def test_list_filters_by_cluster_and_status(fleet):
    drain("n01")
    drain("n02")
    repairs_sync()  # the beat's tick: a read opens no repair
    mia = fleet["mia"]
    assert mia.get("/api/v1/repairs/?cluster=c1&status=open").json()["count"] == 2
    assert mia.get("/api/v1/repairs/?cluster=other").json()["count"] == 0
    assert mia.get("/api/v1/repairs/?status=closed").json()["count"] == 0
    bad = mia.get("/api/v1/repairs/?status=fixed")
    assert bad.status_code == 400 and "status" in bad.json()
    row = mia.get("/api/v1/repairs/?status=open").json()["results"][0]
    assert set(row) >= {"node", "opened_at", "reason", "incidents", "steps", "status", "closed_at"}


def test_engineers_patch_steps_others_are_refused(fleet):
    drain("n01")
    repairs_sync()
    pk = Repair.objects.get().pk
    steps = [
        {"action": "reset_gpu", "note": "nvidia-smi -r"},
        {"action": "rma", "note": "sent back", "ticket": "RMA-1234", "at": "2025-01-02T03:04:05Z"},
    ]
    for persona in ("otto", "mia"):
        assert (
            fleet[persona]
            .patch(f"/api/v1/repairs/{pk}/", {"steps": steps}, format="json")
            .status_code
            == 403
        )
    response = fleet["erin"].patch(f"/api/v1/repairs/{pk}/", {"steps": steps}, format="json")
    assert response.status_code == 200, response.content
    got = response.json()["steps"]
    assert [s["action"] for s in got] == ["reset_gpu", "rma"]
    assert got[0]["by"] == "erin" and got[0]["at"] and "ticket" not in got[0]
    assert got[1]["ticket"] == "RMA-1234" and got[1]["at"].startswith("2025-01-02T03:04:05")
    assert fleet["mia"].get(f"/api/v1/repairs/{pk}/").json()["steps"] == got


def test_bad_input_is_a_400_naming_the_field(fleet):
    drain("n01")
    repairs_sync()
    pk = Repair.objects.get().pk
    erin = fleet["erin"]
    steps = [{"action": "reboot"}, {"action": "reboot"}, {"action": "pray"}]
    response = erin.patch(f"/api/v1/repairs/{pk}/", {"steps": steps}, format="json")
    assert response.status_code == 400 and "steps[2].action" in response.json(), response.json()
    response = erin.patch(
        f"/api/v1/repairs/{pk}/", {"steps": [{"action": "reboot", "at": "soon"}]}, format="json"
    )
    assert response.status_code == 400 and "steps[0].at" in response.json()
    response = erin.patch(f"/api/v1/repairs/{pk}/", {"steps": "reboot"}, format="json")
    assert response.status_code == 400 and "steps" in response.json()
    response = erin.patch(f"/api/v1/repairs/{pk}/", {"status": "closed"}, format="json")
    assert response.status_code == 400 and "status" in response.json()
    assert Repair.objects.get().steps == [] and Repair.objects.get().status == "open"
    assert erin.get("/api/v1/repairs/999/").status_code == 404


def test_returning_a_node_without_an_open_repair_is_a_400(fleet):
    response = fleet["otto"].post("/api/v1/nodes/n01/return/", {}, format="json")
    assert response.status_code == 400 and "node" in response.json()
    assert fleet["otto"].post("/api/v1/nodes/nope/return/", {}, format="json").status_code == 404


def test_only_engineers_skip_burn_in(fleet):
    drain("n01")
    response = fleet["otto"].post("/api/v1/nodes/n01/return/?skip_burn_in=1", {}, format="json")
    assert response.status_code == 403
    assert fleet["mia"].post("/api/v1/nodes/n01/return/", {}, format="json").status_code == 403
    assert fleet["agent"].post("/api/v1/nodes/n01/return/", {}, format="json").status_code == 403


def _closure_values() -> set[str | None]:
    """The values the OpenAPI document allows for a repair's `closed_how`."""
    document = json.loads(
        OpenApiJsonRenderer().render(
            SchemaGenerator().get_schema(request=None, public=True), renderer_context={}
        )
    )
    schemas = document["components"]["schemas"]
    field = schemas["Repair"]["properties"]["closed_how"]
    allowed: set[str | None] = set()
    for ref in field.get("oneOf", []) + field.get("allOf", []):
        allowed |= set(schemas[ref["$ref"].rsplit("/", 1)[1]]["enum"])
    if field.get("nullable"):
        allowed.add(None)
    return allowed


def test_closed_how_of_a_repair_not_closed_is_a_documented_value(fleet):
    """schemathesis: an open repair's `closed_how` was "", outside its own enum, in
    `repairs/`, `repairs/{id}/` and `nodes/{name}/return/`; it is null until it closes."""
    allowed = _closure_values()
    drain("n01")
    drain("n02")
    repairs_sync()
    pk = Repair.objects.get(node__hostname="n01").pk
    listed = fleet["mia"].get("/api/v1/repairs/").json()["results"]
    one = fleet["mia"].get(f"/api/v1/repairs/{pk}/").json()
    returned = fleet["otto"].post("/api/v1/nodes/n01/return/", {}, format="json").json()
    skipped = fleet["erin"].post("/api/v1/nodes/n02/return/?skip_burn_in=1", {}, format="json")
    got = [r["closed_how"] for r in listed] + [one["closed_how"], returned["closed_how"]]
    assert got == [None, None, None, None]
    assert skipped.json()["closed_how"] == "skipped"
    assert set(got) | {"skipped"} <= allowed
