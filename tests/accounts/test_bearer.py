"""`Authorization: Bearer <token>` is the same credential as `Token <token>`
(docs/api.md, Conventions; Alertmanager and Prometheus send Bearer by default), on the API and on
/metrics."""

from __future__ import annotations

import pytest
from django.test import override_settings

from apps.accounts.services import token_issue, token_revoke

pytestmark = pytest.mark.django_db


def test_bearer_works_where_token_does(client, users, nodes):
    token = token_issue(user=users["mia"])
    for scheme in ("Token", "Bearer", "bearer"):
        answer = client.get("/api/v1/nodes/", HTTP_AUTHORIZATION=f"{scheme} {token}")
        assert answer.status_code == 200, scheme


def test_an_agent_bearer_token_is_that_agent_not_an_anonymous_caller(client, users, nodes):
    token = token_issue(user=users["ada"])
    refused = client.get("/api/v1/nodes/", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert refused.status_code == 403  # known, not allowed to read: not a misleading 401


def test_bad_bearer_tokens_are_401(client, users):
    assert client.get("/api/v1/nodes/", HTTP_AUTHORIZATION="Bearer nope").status_code == 401
    assert client.get("/api/v1/nodes/", HTTP_AUTHORIZATION="Bearer a b").status_code == 401
    revoked = token_issue(user=users["mia"])
    token_revoke(user=users["mia"])
    assert client.get("/api/v1/nodes/", HTTP_AUTHORIZATION=f"Bearer {revoked}").status_code == 401


@override_settings(KUAE_METRICS_TOKEN="s3cret-scrape")
def test_metrics_by_bearer(client, users, nodes):
    def scrape(credential: str) -> int:
        return client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {credential}").status_code

    assert scrape("s3cret-scrape") == 200
    assert scrape(token_issue(user=users["root"])) == 200  # an admin's API token
    assert scrape(token_issue(user=users["ada"])) == 403  # an agent: known, not allowed
    assert scrape(token_issue(user=users["mia"])) == 403
    assert scrape("nope") == 401
