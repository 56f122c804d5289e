"""Roles and tokens (docs/api.md, Conventions): create_user, hashed revocable tokens, 401 vs 403."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from apps.accounts.models import ApiToken, User, hash_token
from apps.accounts.services import token_revoke

pytestmark = pytest.mark.django_db


def test_create_user_prints_token_last_and_stores_only_its_hash(monkeypatch):
    out = io.StringIO()
    monkeypatch.setenv("KUAE_PASSWORD", "long-enough-s3cret-pw")
    call_command("create_user", "nina", "--role", "operator", stdout=out, stderr=io.StringIO())
    token = out.getvalue().strip().splitlines()[-1]
    user = User.objects.get(username="nina")
    assert user.role == "operator"
    assert user.check_password("long-enough-s3cret-pw")
    stored = ApiToken.objects.get(user=user)
    assert stored.key_hash == hash_token(token) and token not in stored.key_hash
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert client.get("/api/v1/nodes/").status_code == 200


def test_create_user_updates_role_of_existing_user():
    call_command(
        "create_user", "nina", "--role", "manager", stdout=io.StringIO(), stderr=io.StringIO()
    )
    call_command(
        "create_user",
        "nina",
        "--role",
        "engineer",
        "--password",
        "another long s3cret",
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    assert User.objects.get(username="nina").role == "engineer"


def test_no_credentials_is_401_with_challenge(api):
    response = api(None).get("/api/v1/nodes/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"


def test_bad_and_revoked_tokens_are_401(api, users):
    bad = APIClient()
    bad.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    assert bad.get("/api/v1/nodes/").status_code == 401
    client = api("mia")
    assert client.get("/api/v1/nodes/").status_code == 200
    token_revoke(user=users["mia"])
    assert client.get("/api/v1/nodes/").status_code == 401


@pytest.mark.parametrize(
    ("persona", "expected"),
    [("mia", 403), ("otto", 403), ("erin", 403), ("ada", 403), ("root", 201)],
)
def test_only_admin_creates_clusters(api, persona, expected):
    body = {
        "name": f"x-{persona}",
        "gpu_model": "H100",
        "peak_tflops_per_gpu": 989.4,
        "gpus_per_node": 8,
    }
    assert api(persona).post("/api/v1/clusters/", body, format="json").status_code == expected


@pytest.mark.parametrize(("persona", "expected"), [("mia", 200), ("otto", 200), ("ada", 403)])
def test_agent_has_no_reads(api, cluster, persona, expected):
    assert api(persona).get("/api/v1/clusters/c1/").status_code == expected


@pytest.mark.parametrize(
    ("persona", "expected"), [("mia", 403), ("ada", 403), ("otto", 201), ("erin", 201)]
)
def test_registering_nodes_is_for_operators_and_up(api, cluster, persona, expected):
    response = api(persona).post(
        "/api/v1/nodes/", {"hostname": f"n-{persona}", "cluster": "c1"}, format="json"
    )
    assert response.status_code == expected


@pytest.mark.parametrize(("persona", "expected"), [("ada", 204), ("otto", 403), ("mia", 403)])
def test_heartbeats_are_for_agents(api, nodes, persona, expected):
    assert (
        api(persona).post("/api/v1/nodes/gpu000/heartbeat/", {}, format="json").status_code
        == expected
    )


def test_pages_send_anonymous_to_login_and_refuse_agents(client, users):
    response = client.get("/nodes/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")
    client.force_login(users["ada"])
    assert client.get("/nodes/").status_code == 403
    client.force_login(users["mia"])
    assert client.get("/nodes/").status_code == 200


def test_browser_login_form(client, users):
    # a manager lands on the weekly report, which managers read (docs/pages.md, Signing in)
    response = client.post("/login/", {"username": "mia", "password": "pw"})
    assert response.status_code == 302 and response["Location"] == "/reports/weekly/"
    assert client.get("/").status_code == 200
    client.logout()
    # ... unless the sign-in asked for somewhere else
    response = client.post("/login/?next=/nodes/", {"username": "mia", "password": "pw"})
    assert response.status_code == 302 and response["Location"] == "/nodes/"
    client.logout()
    # everyone else lands on the overview
    response = client.post("/login/", {"username": "otto", "password": "pw"})
    assert response.status_code == 302 and response["Location"] == "/"
    client.logout()
    assert client.post("/login/", {"username": "mia", "password": "wrong"}).status_code == 200
