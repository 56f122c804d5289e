"""LDAP / Active Directory sign-in against a real slapd (docs/sign-in.md): the role follows
the person's groups at every sign-in, no mapped group is refused with a page saying why, the
directory down is said as such (never a 500) while local accounts still sign in, and the
sign-in throttle counts directory failures like any other."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import Client

try:
    import ldap  # noqa: F401  (python-ldap: requirements-ldap.lock)
except ImportError:
    if os.environ.get("CI"):
        raise
    pytest.skip(
        "python-ldap not installed (apt-get install libldap2-dev libsasl2-dev, then make)",
        allow_module_level=True,
    )

from apps.accounts.models import AuditEvent, User
from apps.accounts.services import user_create_or_update
from kuaeweb.ldap_settings import BACKEND, ldap_settings
from tests.slapd import GROUPS, PEOPLE, SERVICE_DN, SERVICE_PW, Slapd, group_dn

pytestmark = pytest.mark.django_db
MODEL_BACKEND = "apps.accounts.backends.ThrottledModelBackend"
ROLE_GROUPS = f"operator={group_dn('gpu-oncall')};manager={group_dn('gpu-mgmt')}"
PEOPLE_PW = {"ada": "ada-directory-pw", "bob": "bob-directory-pw", "carol": "carol-dir-pw"}
MEMBERS = {"gpu-oncall": ["ada"], "gpu-mgmt": ["carol"], "interns": ["bob"]}
LOCAL_PW = "a local admin's password"


@pytest.fixture
def slapd(tmp_path: Path) -> Iterator[Slapd]:
    """A slapd of this test's own: ada on call, carol in management, bob an intern."""
    server = Slapd(tmp_path / "slapd", PEOPLE_PW, MEMBERS)
    yield server
    server.stop()


def configure(monkeypatch: pytest.MonkeyPatch, settings, slapd: Slapd, **env: str) -> None:  # noqa: ANN001
    """Turn LDAP sign-in on as a site would: the environment read by kuaeweb.ldap_settings
    (`env` adds to or replaces the OpenLDAP defaults below; "" unsets), applied to settings."""
    values = {
        "KUAE_LDAP_URL": slapd.url,
        "KUAE_LDAP_BIND_DN": SERVICE_DN,
        "KUAE_LDAP_BIND_PASSWORD": SERVICE_PW,
        "KUAE_LDAP_USER_SEARCH_BASE": PEOPLE,
        "KUAE_LDAP_GROUP_SEARCH_BASE": GROUPS,
        "KUAE_ROLE_GROUPS": ROLE_GROUPS,
        **env,
    }
    for name, value in values.items():
        if value:
            monkeypatch.setenv(name, value)
        else:
            monkeypatch.delenv(name, raising=False)
    for name, value in ldap_settings().items():
        setattr(settings, name, value)
    settings.KUAE_ROLE_GROUPS = values["KUAE_ROLE_GROUPS"]
    settings.AUTHENTICATION_BACKENDS = [MODEL_BACKEND, BACKEND]


@pytest.fixture
def directory(monkeypatch: pytest.MonkeyPatch, settings, slapd: Slapd) -> Slapd:  # noqa: ANN001
    """LDAP sign-in on, against `slapd`, groups found by `member` (OpenLDAP)."""
    configure(monkeypatch, settings, slapd)
    return slapd


def sign_in(client: Client, username: str, password: str):  # noqa: ANN201
    return client.post("/login/", {"username": username, "password": password})


def signed_in_as(client: Client) -> str | None:
    user_id = client.session.get("_auth_user_id")
    return User.objects.get(pk=user_id).username if user_id else None


def test_right_password_signs_in_with_the_mapped_role(directory: Slapd) -> None:
    client = Client()
    response = sign_in(client, "ada", PEOPLE_PW["ada"])
    assert response.status_code == 302 and signed_in_as(client) == "ada"
    ada = User.objects.get(username="ada")
    assert ada.role == "operator"
    assert not ada.has_usable_password()  # the directory holds the password
    assert ada.email == "ada@example.com" and ada.first_name == "Ada"
    assert AuditEvent.objects.filter(kind="login", username="ada").count() == 1
    assert not AuditEvent.objects.filter(kind="login_failed").exists()


def test_the_role_follows_the_group_at_the_next_sign_in(directory: Slapd) -> None:
    client = Client()
    assert sign_in(client, "ada", PEOPLE_PW["ada"]).status_code == 302
    assert User.objects.get(username="ada").role == "operator"
    client.post("/logout/")
    directory.move("ada", "gpu-oncall", "gpu-mgmt")  # ldapmodify, as the site's admin would
    response = sign_in(client, "ada", PEOPLE_PW["ada"])
    assert response.status_code == 302 and response["Location"].startswith("/reports/weekly")
    assert User.objects.get(username="ada").role == "manager"


def test_highest_role_of_several_mapped_groups(directory: Slapd) -> None:
    directory.ldap(
        "ldapmodify",
        f"dn: {group_dn('gpu-oncall')}\nchangetype: modify\nadd: member\n"
        f"member: uid=carol,{PEOPLE}\n",
    )
    assert sign_in(Client(), "carol", PEOPLE_PW["carol"]).status_code == 302
    assert User.objects.get(username="carol").role == "operator"


def test_no_mapped_group_is_refused_with_a_page_saying_why(directory: Slapd) -> None:
    client = Client()
    response = sign_in(client, "bob", PEOPLE_PW["bob"])
    page = response.content.decode()
    assert response.status_code == 403 and signed_in_as(client) is None
    assert "in no group that KUAE Ops gives a role to" in page
    assert "Wrong username or password" not in page
    assert not User.objects.filter(username="bob").exists()


def test_a_wrong_password_is_the_ordinary_failure_counted_once(directory: Slapd) -> None:
    client = Client()
    response = sign_in(client, "ada", "not ada's password")
    assert response.status_code == 200 and signed_in_as(client) is None
    assert "Wrong username or password" in response.content.decode()
    # One attempt, one failure, though two backends looked at it.
    assert AuditEvent.objects.filter(kind="login_failed", username="ada").count() == 1
    assert not User.objects.filter(username="ada").exists()


def test_the_throttle_counts_directory_failures(directory: Slapd) -> None:
    guesser = Client(REMOTE_ADDR="203.0.113.7")
    for _ in range(4):  # under the limit of five: each attempt counts once
        assert sign_in(guesser, "ada", "guess").status_code == 200
    assert sign_in(guesser, "ada", PEOPLE_PW["ada"]).status_code == 302
    guesser.post("/logout/")
    stranger = Client(REMOTE_ADDR="203.0.113.8")
    for _ in range(5):
        sign_in(stranger, "ada", "guess")
    blocked = sign_in(stranger, "ada", PEOPLE_PW["ada"])
    assert blocked.status_code == 429 and signed_in_as(stranger) is None


def test_directory_down_is_said_and_local_accounts_still_sign_in(directory: Slapd) -> None:
    user_create_or_update(username="root", role="admin", password=LOCAL_PW, check_password=False)
    directory.stop()
    client = Client()
    response = sign_in(client, "ada", PEOPLE_PW["ada"])
    page = response.content.decode()
    assert response.status_code == 503 and signed_in_as(client) is None
    assert "The directory is unreachable" in page and "Wrong username" not in page
    assert sign_in(client, "root", LOCAL_PW).status_code == 302
    assert signed_in_as(client) == "root"
    # Back up, the directory signs people in again.
    directory.start()
    other = Client()
    assert sign_in(other, "ada", PEOPLE_PW["ada"]).status_code == 302


def test_a_local_account_of_the_same_name_is_not_taken_over(directory: Slapd) -> None:
    local = user_create_or_update(
        username="carol", role="engineer", password=LOCAL_PW, check_password=False
    )
    client = Client()
    assert sign_in(client, "carol", PEOPLE_PW["carol"]).status_code == 200  # not hers here
    local.refresh_from_db()
    assert local.role == "engineer" and local.has_usable_password()
    assert sign_in(client, "carol", LOCAL_PW).status_code == 302


def test_bind_password_from_a_file(
    monkeypatch: pytest.MonkeyPatch,
    settings,
    slapd: Slapd,
    tmp_path: Path,  # noqa: ANN001
) -> None:
    secret = tmp_path / "bind-password"
    secret.write_text(SERVICE_PW + "\n")
    configure(
        monkeypatch,
        settings,
        slapd,
        KUAE_LDAP_BIND_PASSWORD="",
        KUAE_LDAP_BIND_PASSWORD_FILE=str(secret),
    )
    assert settings.AUTH_LDAP_BIND_PASSWORD == SERVICE_PW
    assert sign_in(Client(), "ada", PEOPLE_PW["ada"]).status_code == 302
    # A wrong one in the file: the directory refuses KUAE's own bind, said as such.
    secret.write_text("stale\n")
    configure(
        monkeypatch,
        settings,
        slapd,
        KUAE_LDAP_BIND_PASSWORD="",
        KUAE_LDAP_BIND_PASSWORD_FILE=str(secret),
    )
    response = sign_in(Client(), "carol", PEOPLE_PW["carol"])
    assert response.status_code == 503
    assert "The directory answered with an error" in response.content.decode()


def test_groups_from_member_of_as_active_directory_gives_them(
    monkeypatch: pytest.MonkeyPatch,
    settings,
    slapd: Slapd,  # noqa: ANN001
) -> None:
    configure(
        monkeypatch, settings, slapd, KUAE_LDAP_GROUPS="memberOf", KUAE_LDAP_GROUP_SEARCH_BASE=""
    )
    assert sign_in(Client(), "carol", PEOPLE_PW["carol"]).status_code == 302
    assert User.objects.get(username="carol").role == "manager"
    assert sign_in(Client(), "bob", PEOPLE_PW["bob"]).status_code == 403


def test_the_admin_sign_in_says_the_same(directory: Slapd) -> None:
    form = {"username": "bob", "password": PEOPLE_PW["bob"], "next": "/admin/"}
    refused = Client().post("/admin/login/", form)
    assert refused.status_code == 403
    assert "in no group that KUAE Ops gives a role to" in refused.content.decode()
    directory.stop()
    form = {"username": "ada", "password": PEOPLE_PW["ada"], "next": "/admin/"}
    down = Client().post("/admin/login/", form)
    assert down.status_code == 503 and "The directory is unreachable" in down.content.decode()
