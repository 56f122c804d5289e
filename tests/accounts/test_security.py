"""Sign-in throttle, the audit log, CSRF, the content security policy, /metrics and docs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client, override_settings

from apps.accounts.models import AuditEvent

pytestmark = pytest.mark.django_db
TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


def _login(client: Client, username: str, password: str):  # noqa: ANN202
    return client.post("/login/", {"username": username, "password": password})


@override_settings(KUAE_LOGIN_FAILURES=3)
def test_sign_in_is_throttled_after_repeated_failures_and_audited(users):
    client = Client()
    for _ in range(3):
        assert _login(client, "otto", "wrong").status_code == 200  # the form again
    blocked = _login(client, "otto", "pw")  # even the right password is not checked now
    assert blocked.status_code == 429 and "Too many failed sign-ins" in blocked.content.decode()
    assert "_auth_user_id" not in client.session
    other = Client()
    assert _login(other, "mia", "pw").status_code == 302  # another user is unaffected
    kinds = list(AuditEvent.objects.order_by("id").values_list("kind", "username"))
    assert kinds == [
        *[("login_failed", "otto")] * 3,
        ("login_throttled", "otto"),
        ("login", "mia"),
    ]
    assert AuditEvent.objects.filter(kind="login", ip="127.0.0.1").exists()


def test_permission_denials_are_audited(api, users, client):
    assert api("mia").post("/api/v1/incidents/", {}, format="json").status_code == 403
    client.force_login(users["otto"])
    assert client.get("/incidents/new/").status_code == 403
    denied = list(
        AuditEvent.objects.filter(kind="denied").order_by("id").values_list("username", "path")
    )
    assert denied == [("mia", "/api/v1/incidents/"), ("otto", "/incidents/new/")]


def test_forms_need_the_csrf_token(users):
    client = Client(enforce_csrf_checks=True)
    client.force_login(users["erin"])
    assert client.post("/incidents/new/", {"title": "x"}).status_code == 403
    page = client.get("/incidents/new/").content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)[1]
    assert client.post("/incidents/new/", {"csrfmiddlewaretoken": token}).status_code == 400


def test_content_security_policy_and_no_inline_scripts(client, users):
    client.force_login(users["mia"])
    csp = client.get("/").headers["Content-Security-Policy"]
    assert (
        "script-src 'self'" in csp
        and "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
    )
    assert "frame-ancestors 'none'" in csp
    for template in TEMPLATES.rglob("*.html"):
        for tag in re.findall(r"<script\b[^>]*>", template.read_text()):
            assert "src=" in tag or 'type="application/json"' in tag, (template, tag)
        assert not re.search(r"\son[a-z]+=", template.read_text()), template  # no onclick=…


def test_metrics_need_an_admin_or_the_token(client, users, nodes):
    assert client.get("/metrics").status_code == 401
    client.force_login(users["mia"])
    assert client.get("/metrics").status_code == 403
    client.force_login(users["root"])
    body = client.get("/metrics").content.decode()
    assert 'kuae_nodes{cluster="c1",state="healthy"} 8.0' in body
    assert 'kuae_gpus{cluster="c1",state="healthy"} 64.0' in body
    client.logout()
    with override_settings(KUAE_METRICS_TOKEN="s3cret-scrape"):
        assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer nope").status_code == 401
        ok = client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-scrape")
        assert ok.status_code == 200 and "kuae_open_incidents" in ok.content.decode()


def test_api_docs_for_signed_in_readers(client, users):
    assert client.get("/api/docs/").status_code == 302
    assert client.get("/api/v1/schema/").status_code == 401
    client.force_login(users["mia"])
    page = client.get("/api/docs/")
    assert page.status_code == 200
    script = client.get("/api/docs/?script=")
    assert script.status_code == 200 and b"SwaggerUIBundle" in script.content
    assert client.get("/api/v1/schema/").status_code == 200  # the page fetches it by session
