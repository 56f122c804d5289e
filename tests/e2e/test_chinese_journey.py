"""A directory user's day in Chinese, the way issue 45 is judged, in real Chromium against a
real slapd: signed in through the Chinese sign-in page as an operator by their LDAP group,
every page the operator reaches read at 1440 px and on a 390-px phone with no English label
left (tests/i18n_check.py: what the page shows, less the fleet's own data), axe-core clean
and nothing scrolling sideways; then moved to the managers' group in the directory, the next
sign-in makes them a manager (docs/sign-in.md, docs/pages.md, Language)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.management import call_command

from apps.accounts.models import User
from tests.e2e.test_every_page import MODES, SCAN, WIDE, _axe, _pages
from tests.i18n_check import visible_english
from tests.i18n_data import stored_words

try:
    import ldap  # noqa: F401  (python-ldap: requirements-ldap.lock)
except ImportError:
    if os.environ.get("CI"):
        raise
    pytest.skip("python-ldap not installed (docs/sign-in.md)", allow_module_level=True)

from kuaeweb.ldap_settings import BACKEND, ldap_settings
from tests.slapd import GROUPS, PEOPLE, SERVICE_DN, SERVICE_PW, Slapd, group_dn

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "ada-directory-pw"


@pytest.fixture
def directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings) -> Iterator[Slapd]:  # noqa: ANN001
    """LDAP sign-in on against a slapd of the test's own: ada is on call (an operator)."""
    server = Slapd(tmp_path / "slapd", {"ada": PASSWORD}, {"gpu-oncall": ["ada"], "gpu-mgmt": []})
    env = {
        "KUAE_LDAP_URL": server.url,
        "KUAE_LDAP_BIND_DN": SERVICE_DN,
        "KUAE_LDAP_BIND_PASSWORD": SERVICE_PW,
        "KUAE_LDAP_USER_SEARCH_BASE": PEOPLE,
        "KUAE_LDAP_GROUP_SEARCH_BASE": GROUPS,
        "KUAE_ROLE_GROUPS": f"operator={group_dn('gpu-oncall')};manager={group_dn('gpu-mgmt')}",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for name, value in ldap_settings().items():
        setattr(settings, name, value)
    settings.KUAE_ROLE_GROUPS = env["KUAE_ROLE_GROUPS"]
    settings.AUTHENTICATION_BACKENDS = [*settings.AUTHENTICATION_BACKENDS, BACKEND]
    yield server
    server.stop()


def sign_in(page, base: str, username: str) -> None:  # noqa: ANN001
    page.goto(base + "/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click(".login button[type=submit]")  # not the header's language switch
    page.wait_for_selector("main")


def test_a_directory_operator_reads_every_page_in_chinese(chromium, live_server, directory):  # noqa: ANN001
    axe = _axe()
    call_command("simulate", gpus=64, days=7, seed=7)
    found: dict[str, list[str]] = {}
    pages: list[str] | None = None
    known: set[str] = set()
    for mode in ("desktop", "phone"):
        width, height, scheme = MODES[mode]
        context = chromium.new_context(
            viewport={"width": width, "height": height}, color_scheme=scheme, locale="zh-CN"
        )
        context.route(
            live_server.url + "/__axe.js",
            lambda route: route.fulfill(body=axe, content_type="application/javascript"),
        )
        page = context.new_page()
        page.goto(live_server.url + "/login/")
        assert page.evaluate("document.documentElement.lang").lower().startswith("zh")
        found["login"] = visible_english(page.content())
        sign_in(page, live_server.url, "ada")
        if pages is None:
            assert User.objects.get(username="ada").role == "operator"
            pages = _pages("operator")
            known = stored_words()  # the fleet's own text (tests/i18n_data.py)
        for url in pages:
            page.goto(live_server.url + url)
            page.wait_for_load_state("networkidle")
            where = f"{mode} {url}"
            english = visible_english(page.content(), known)
            if english:
                found.setdefault(where, []).append(f"English: {english[:15]}")
            scroll, inner = page.evaluate(WIDE)
            if scroll > inner + 1:
                found.setdefault(where, []).append(f"{scroll} px wide in a {inner} px window")
            page.add_script_tag(url=live_server.url + "/__axe.js")
            found.setdefault(where, []).extend(page.evaluate(SCAN))
        context.close()
    found = {k: v for k, v in found.items() if v}
    assert not found, "\n".join(f"{where}: {what}" for where, what in found.items())

    # Moved to the managers' group in the directory: the next sign-in makes ada a manager.
    directory.move("ada", "gpu-oncall", "gpu-mgmt")
    context = chromium.new_context(viewport={"width": 1440, "height": 900}, locale="zh-CN")
    page = context.new_page()
    sign_in(page, live_server.url, "ada")
    assert User.objects.get(username="ada").role == "manager"
    assert "(manager)" not in page.content()  # the role is worded in Chinese too
    context.close()
