"""The report answers are described by the OpenAPI document and conform to it — with data
and without (an empty week: the figures that cannot be computed are null, as documented)."""

from __future__ import annotations

import datetime as dt
import json

import pytest
import schemathesis
from django.core.management import call_command
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance, status_code_conformance

from apps.accounts.services import token_issue

PATHS = (
    "/api/v1/reports/weekly/",
    "/api/v1/reports/reliability/",
    "/api/v1/reports/availability/",
)


@pytest.fixture(scope="module")
def schema():  # noqa: ANN201
    raw = SchemaGenerator().get_schema(request=None, public=True)
    return schemathesis.openapi.from_dict(
        json.loads(OpenApiJsonRenderer().render(raw, renderer_context={}))
    )


def test_every_report_answer_has_a_schema(schema):
    for path in PATHS:
        answer = schema.raw_schema["paths"][path]["get"]["responses"]["200"]
        assert "$ref" in json.dumps(answer), path  # a described object, not a bare dict


@pytest.mark.parametrize("simulated", [False, True])
def test_report_answers_conform(schema, live_server, users, cluster, nodes, simulated):
    if simulated:
        call_command("simulate", gpus=64, days=10, seed=3, force=True, verbosity=0)
    week = (dt.date.today() - dt.timedelta(days=7)).isocalendar()
    queries = {
        "/api/v1/reports/weekly/": {"week": f"{week.year}-W{week.week:02d}"},
        "/api/v1/reports/reliability/": {"job_nodes": 16},
        "/api/v1/reports/availability/": {},
    }
    headers = {"Authorization": f"Token {token_issue(user=users['mia'])}"}
    checks = [not_a_server_error, status_code_conformance, response_schema_conformance]
    for name in ["c1"] + (["kuae-sim"] if simulated else []):
        for path, query in queries.items():
            case = schema[path]["GET"].Case(query={"cluster": name, **query})
            response = case.call_and_validate(
                base_url=live_server.url, headers=headers, checks=checks
            )
            assert response.status_code == 200, (path, response.text)
