"""Schemathesis against the app's own OpenAPI document: generated requests (valid and
invalid) to every operation, as an admin (who may call them all). No answer is a 5xx, and
every answer matches its documented schema and content type.

`make test` runs a bounded number of cases per operation (KUAE_FUZZ_EXAMPLES, 8 by
default); `make fuzz` runs many more.
"""

from __future__ import annotations

import json
import os

import pytest
import schemathesis
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
)

from apps.accounts.services import token_issue, user_create_or_update
from apps.fleet.services import NodeSpec, cluster_create, nodes_register

EXAMPLES = int(os.environ.get("KUAE_FUZZ_EXAMPLES", "8"))
CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance]


def _document() -> dict:
    raw = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(raw, renderer_context={}))


schema = schemathesis.openapi.from_dict(_document())


@pytest.fixture
def admin_headers(transactional_db) -> dict[str, str]:  # noqa: ANN001
    """An admin's token, and a small cluster for the generated requests to land in."""
    cluster = cluster_create(
        name="c1", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8
    )
    nodes_register(
        cluster=cluster,
        specs=[
            NodeSpec(hostname=f"gpu{i:03d}", rack="r0", in_service_at=timezone.now())
            for i in range(4)
        ],
    )
    root = user_create_or_update(username="fuzz-admin", role="admin")
    return {"Authorization": f"Token {token_issue(user=root)}"}


@pytest.mark.fuzz
@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_api_conforms_and_never_fails(case, live_server, admin_headers):  # noqa: ANN001
    case.call_and_validate(base_url=live_server.url, headers=admin_headers, checks=CHECKS)
