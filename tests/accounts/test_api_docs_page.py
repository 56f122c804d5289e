"""The Swagger UI page (/api/docs/) inside the app's frame: the header and navigation of every
page, swagger-ui's files from /static/, no inline script; readers only unless the site makes
its docs public, and then anyone, with a sign-in link in the header."""

from __future__ import annotations

import re

import pytest
from django.test import override_settings

pytestmark = pytest.mark.django_db

SCRIPT = re.compile(r"<script\b([^>]*)>(.*?)</script>", re.S)


def _scripts(html: str) -> list[tuple[str, str]]:
    """(attributes, body) of every <script> on the page."""
    return SCRIPT.findall(html)


def test_the_page_is_in_the_app_frame_with_local_assets_and_no_inline_script(client, users):
    client.force_login(users["mia"])
    page = client.get("/api/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    assert '<header class="top">' in html and 'aria-label="Main"' in html  # the app's frame
    assert re.search(r'<a href="/api/docs/" aria-current="page">API</a>', html)
    assert "mia" in html and "Sign out" in html and ">Sign in<" not in html
    assert '<div id="swagger-ui" lang="en" translate="no">' in html
    assert 'href="/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui.css"' in html
    sources = [re.search(r'src="([^"]+)"', attrs) for attrs, _ in _scripts(html)]
    assert all(sources), "every script is a file: the page CSP allows no inline script"
    assert not any(body.strip() for _, body in _scripts(html))
    urls = [s[1] for s in sources if s]
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in urls
    assert all(u.startswith("/") for u in urls), urls  # nothing from another origin
    init = next(u for u in urls if "script=" in u).replace("&amp;", "&")
    script = client.get(init)
    assert script.status_code == 200
    assert script["Content-Type"].startswith("application/javascript")
    assert b'url: "/api/v1/schema/"' in script.content and b"SwaggerUIBundle" in script.content
    csp = page["Content-Security-Policy"]
    script_src = csp.split("script-src")[1].split(";")[0]
    assert script_src.strip() == "'self'", csp


@pytest.mark.parametrize("persona", ["mia", "otto", "erin", "root"])
def test_every_reader_opens_it(client, users, persona):
    client.force_login(users[persona])
    assert client.get("/api/docs/").status_code == 200
    assert client.get("/api/docs/?script=").status_code == 200
    assert client.get("/api/v1/schema/").status_code == 200


def test_not_public_by_default(client, users):
    page = client.get("/api/docs/")
    assert page.status_code == 302 and page["Location"].startswith("/login/?next=/api/docs/")
    assert client.get("/api/docs/?script=").status_code == 302
    assert client.get("/api/v1/schema/").status_code == 401
    client.force_login(users["ada"])  # an agent reads nothing
    assert client.get("/api/docs/").status_code == 403


@override_settings(KUAE_PUBLIC_DOCS=True)
def test_public_docs_open_to_anyone_with_a_sign_in_link(client):
    page = client.get("/api/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    assert '<header class="top">' in html
    assert '<div id="swagger-ui" lang="en" translate="no">' in html
    assert '<a class="sign-in" href="/login/?next=/api/docs/">Sign in</a>' in html
    assert "Sign out" not in html and 'role="search"' not in html  # no user menu, no search
    assert client.get("/api/docs/?script=").status_code == 200
    schema = client.get("/api/v1/schema/")
    assert schema.status_code == 200 and b"/api/v1/clusters/" in schema.content


def test_the_sign_in_page_has_no_sign_in_link(client):
    html = client.get("/login/").content.decode()
    assert 'class="sign-in"' not in html and "<h1>Sign in</h1>" in html
