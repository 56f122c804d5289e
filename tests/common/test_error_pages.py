"""403/404/500 pages inside the app's frame with a way back (issue 18, item 5); the API
keeps answering JSON."""

from __future__ import annotations

import pytest
from django.test import override_settings
from django.urls import path

from kuaeweb.urls import urlpatterns as app_urls

pytestmark = pytest.mark.django_db


def _boom(request):  # noqa: ANN001, ANN202
    raise RuntimeError("boom")


urlpatterns = [*app_urls, path("boom/", _boom)]
handler403 = "apps.common.views.permission_denied"
handler404 = "apps.common.views.page_not_found"
handler500 = "apps.common.views.server_error"


def _framed(html: str) -> bool:
    return '<header class="top">' in html and "<main" in html and "KUAE&nbsp;Ops" in html


@override_settings(DEBUG=False)
def test_404_inside_the_frame_with_a_link_home(client, users):
    client.force_login(users["mia"])
    response = client.get("/nope/")
    html = response.content.decode()
    assert response.status_code == 404 and _framed(html)
    assert "Page not found" in html and 'href="/">Back to the overview' in html
    assert 'id="site-search"' in html  # the header works as on any page


@override_settings(DEBUG=False)
def test_403_inside_the_frame_says_why(client, users):
    client.force_login(users["mia"])  # a manager may not file incidents
    response = client.get("/incidents/new/")
    html = response.content.decode()
    assert response.status_code == 403 and _framed(html)
    # the role by its label, in the page's language
    assert "Not allowed" in html and "(Manager)" in html and 'href="/">' in html


@override_settings(DEBUG=False, ROOT_URLCONF=__name__)
def test_500_needs_no_request_and_no_database(client, users):
    client.force_login(users["mia"])
    client.raise_request_exception = False
    response = client.get("/boom/")
    html = response.content.decode()
    assert response.status_code == 500 and _framed(html)
    assert "Something went wrong" in html and 'href="/">Back to the overview' in html


@override_settings(DEBUG=False, ROOT_URLCONF=__name__)
def test_the_api_keeps_json_errors(client, users):
    client.raise_request_exception = False
    assert client.get("/api/v1/nope/").json() == {"detail": "Not found."}
    client.force_login(users["mia"])
    assert client.get("/api/v1/nope/")["Content-Type"] == "application/json"
    assert client.get("/api/v1/nodes/nope/").status_code == 404
