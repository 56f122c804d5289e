"""The admin's "Add API token" issues a working token, shown once (issue 42)."""

from __future__ import annotations

import re

import pytest
from rest_framework.test import APIClient

from apps.accounts.models import ApiToken

pytestmark = pytest.mark.django_db


def test_admin_add_issues_a_working_token_shown_once(client, users) -> None:  # noqa: ANN001
    client.force_login(users["root"])
    form = client.get("/admin/accounts/apitoken/add/").content.decode()
    assert 'name="user"' in form and 'name="key_hash"' not in form
    r = client.post("/admin/accounts/apitoken/add/", {"user": users["mia"].pk})
    html = r.content.decode()
    assert r.status_code == 200 and "added successfully" not in html
    assert "shown only this once" in html and "no-store" in r["Cache-Control"]
    raw = re.search(r'<code id="raw-token"[^>]*>([^<]+)</code>', html)
    assert raw is not None
    token = ApiToken.objects.get(user=users["mia"])
    assert token.prefix == raw.group(1)[:8] and len(token.key_hash) == 64
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {raw.group(1)}")
    assert api.get("/api/v1/clusters/").status_code == 200  # the token works
    again = client.get(f"/admin/accounts/apitoken/{token.pk}/change/").content.decode()
    assert raw.group(1) not in again  # never shown again


def test_a_tokens_user_is_not_edited(client, users) -> None:  # noqa: ANN001
    raw = ApiToken.issue(users["mia"])
    token = ApiToken.objects.get(user=users["mia"])
    client.force_login(users["root"])
    page = client.get(f"/admin/accounts/apitoken/{token.pk}/change/").content.decode()
    assert '<select name="user"' not in page and 'name="revoked_at_0"' in page
    assert raw not in page
