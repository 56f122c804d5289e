"""Accounts hardening (issue 16, item 4): each test is an attack that worked before — the
sign-in throttle dodged or turned on a whole proxy, weak passwords, tokens that never die,
sessions that never idle out, /readyz naming the database, a secret key in the source."""

from __future__ import annotations

import datetime as dt
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import authenticate
from django.core.management import CommandError, call_command
from django.db import OperationalError
from django.test import Client, RequestFactory, override_settings
from django.utils import timezone
from rest_framework.test import APIClient

from apps.accounts.models import ApiToken, AuditEvent, User
from apps.accounts.services import token_issue, user_create_or_update
from apps.accounts.sessions import SEEN

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
STRONG = "correct horse battery staple 42"
THREE = override_settings(KUAE_LOGIN_FAILURES=3)  # 3 per (account, address), 12 per address


def _login(client: Client, username: str, password: str, path: str = "/login/"):  # noqa: ANN202
    return client.post(path, {"username": username, "password": password})


def _signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def _api(token: str) -> int:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client.get("/api/v1/nodes/").status_code


# --- the sign-in throttle -----------------------------------------------------------------


@THREE
def test_admin_sign_in_is_throttled_like_the_dashboards(users):
    client = Client()
    for path in ("/login/", "/admin/login/", "/admin/login/"):  # one count for both pages
        assert _login(client, "root", "wrong", path).status_code == 200
    blocked = _login(client, "root", "pw", "/admin/login/")
    assert blocked.status_code == 429 and "Too many failed sign-ins" in blocked.content.decode()
    assert not _signed_in(client)
    assert AuditEvent.objects.filter(kind="login_throttled", username="root").count() == 1


@THREE
def test_a_full_width_or_upper_case_username_counts_as_the_same_user(users):
    client = Client()
    for name in ("ｏｔｔｏ", "OTTO", "Otto"):  # NFKC and casefolded: all otto
        assert _login(client, name, "wrong").status_code == 200
    assert list(AuditEvent.objects.values_list("username", flat=True)) == ["otto"] * 3
    for name in ("ｏｔｔｏ", "otto"):  # locked, whichever way it is written
        other = Client()
        assert _login(other, name, "pw").status_code == 429 and not _signed_in(other)
    # Any other path to authenticate() is held back too (the backend), from that address.
    assert authenticate(RequestFactory().post("/"), username="otto", password="pw") is None
    elsewhere = RequestFactory(REMOTE_ADDR="198.51.100.20").post("/")
    assert authenticate(elsewhere, username="otto", password="pw") is not None


@THREE
def test_a_locked_user_is_not_signed_in_by_a_full_width_name(users):
    client = Client()
    for _ in range(3):
        _login(client, "otto", "wrong")
    response = _login(client, "ｏｔｔｏ", "pw")
    assert response.status_code == 429 and not _signed_in(client)


@THREE
def test_failures_from_one_address_do_not_lock_out_a_proxy_full_of_users(users):
    # mia signed in from her browser earlier this month (it keeps a signed device cookie).
    mia = Client()
    assert _login(mia, "mia", "pw").status_code == 302
    mia.post("/logout/")
    # Someone behind the same proxy (same address) sprays passwords over many users.
    attacker = Client()
    for i in range(12):
        _login(attacker, f"user{i}", "guess")
    assert _login(attacker, "someone-else", "guess").status_code == 429
    # mia, from her browser, signs in: the address limit does not hold her back.
    assert _login(mia, "mia", "pw").status_code == 302 and _signed_in(mia)
    # A browser that never signed in as erin waits out the window at most (the bound) …
    erin = Client()
    assert _login(erin, "erin", "pw").status_code == 429
    AuditEvent.objects.update(at=timezone.now() - dt.timedelta(seconds=901))
    assert _login(erin, "erin", "pw").status_code == 302
    # … and others' failures as mia from her address do not hold her browser back either
    # (issue 32: a guesser must not lock a person out); a fresh browser there is held.
    mia.post("/logout/")
    for _ in range(3):
        _login(Client(), "mia", "wrong")
    assert _login(Client(), "mia", "pw").status_code == 429
    assert _login(mia, "mia", "pw").status_code == 302 and _signed_in(mia)


@THREE
def test_a_forged_device_cookie_counts_for_nothing(users):
    attacker = Client()
    for i in range(12):
        _login(attacker, f"user{i}", "guess")
    attacker.cookies["kuae_device"] = '["mia"]:forged:signature'
    assert _login(attacker, "mia", "pw").status_code == 429


# --- passwords ----------------------------------------------------------------------------


@pytest.mark.parametrize("weak", ["password", "12345678901234", "nina", "nina-nina-1"])
def test_create_user_refuses_a_weak_password(weak, monkeypatch):
    with pytest.raises(CommandError, match="password refused"):
        call_command(
            "create_user",
            "nina",
            "--role",
            "operator",
            "--password",
            weak,
            stdout=io.StringIO(),
            stderr=io.StringIO(),
        )
    monkeypatch.setenv("KUAE_PASSWORD", weak)
    with pytest.raises(CommandError, match="password refused"):
        call_command(
            "create_user", "nina", "--role", "operator", stdout=io.StringIO(), stderr=io.StringIO()
        )
    assert not User.objects.filter(username="nina").exists()  # nothing half-made
    call_command(
        "create_user",
        "nina",
        "--role",
        "operator",
        "--password",
        STRONG,
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    assert User.objects.get(username="nina").check_password(STRONG)


def test_the_admins_password_change_refuses_a_weak_one_and_a_change_revokes_tokens(client, users):
    token = token_issue(user=users["otto"])
    client.force_login(users["root"])
    url = f"/admin/accounts/user/{users['otto'].pk}/password/"
    weak = client.post(
        url, {"usable_password": "true", "password1": "password", "password2": "password"}
    )
    assert weak.status_code == 200 and "This password is too common" in weak.content.decode()
    assert _api(token) == 200  # nothing changed
    changed = client.post(
        url, {"usable_password": "true", "password1": STRONG, "password2": STRONG}
    )
    assert changed.status_code == 302
    assert User.objects.get(username="otto").check_password(STRONG)
    assert _api(token) == 401


# --- tokens -------------------------------------------------------------------------------


def test_reissuing_a_token_revokes_the_old_one(users):
    first = token_issue(user=users["otto"])
    second = token_issue(user=users["otto"])
    assert (_api(first), _api(second)) == (401, 200)
    out = io.StringIO()
    call_command("create_user", "otto", "--role", "operator", stdout=out, stderr=io.StringIO())
    assert (_api(second), _api(out.getvalue().split()[-1])) == (401, 200)


def test_a_password_change_revokes_every_token(users):
    token = token_issue(user=users["otto"])
    user_create_or_update(username="otto", role="operator", password=STRONG)
    assert _api(token) == 401
    again = token_issue(user=users["otto"])
    otto = User.objects.get(username="otto")
    otto.set_password(STRONG + "!")
    otto.save()
    assert _api(again) == 401
    # Turning password sign-in off is a change too.
    dropped = token_issue(user=otto)
    otto.set_unusable_password()
    otto.save()
    assert _api(dropped) == 401
    # A save that sets no password (a role change, a sign-in's last_login) revokes nothing.
    third = token_issue(user=otto)
    otto.first_name = "Otto"
    otto.save()
    assert _api(third) == 200


@override_settings(KUAE_TOKEN_TTL_DAYS=30)
def test_an_expired_token_is_401(users):
    token = token_issue(user=users["otto"])
    issued = timezone.now() - dt.timedelta(days=29, hours=23)
    ApiToken.objects.filter(user=users["otto"]).update(created_at=issued)
    assert _api(token) == 200
    ApiToken.objects.filter(user=users["otto"]).update(created_at=issued - dt.timedelta(hours=2))
    response = APIClient()
    response.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    answer = response.get("/api/v1/nodes/")
    assert answer.status_code == 401 and "expired" in answer.json()["detail"]


# --- sessions -----------------------------------------------------------------------------


def test_a_session_idles_out(client, users):
    assert settings.KUAE_SESSION_IDLE_S == 60 * 60  # the default
    assert settings.SESSION_COOKIE_AGE == 12 * 3600  # was 14 days
    client.force_login(users["mia"])
    assert client.get("/").status_code == 200
    session = client.session
    seen = session[SEEN]
    assert abs(seen - timezone.now().timestamp()) < 5  # noted on use
    session[SEEN] = seen - settings.KUAE_SESSION_IDLE_S + 120  # idle 58 minutes
    session.save()
    assert client.get("/").status_code == 200  # still in: and in use again
    assert client.session[SEEN] >= seen
    session = client.session
    session[SEEN] = seen - settings.KUAE_SESSION_IDLE_S - 1  # idle an hour
    session.save()
    response = client.get("/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")
    assert not _signed_in(client)


def test_token_calls_never_write_a_session(api, users):
    from django.contrib.sessions.models import Session

    assert api("mia").get("/api/v1/nodes/").status_code == 200
    assert not Session.objects.exists()


# --- /readyz ------------------------------------------------------------------------------


class _DeadConnection:
    """The database down, as psycopg says it: host, port, role and name."""

    vendor = "postgresql"

    def cursor(self) -> None:
        raise OperationalError(
            'connection to server at "db.internal" (10.0.0.5), port 5432 failed: '
            'FATAL: password authentication failed for user "kuae" database "kuae_prod"'
        )


def test_readyz_tells_the_open_network_only_ok_or_not(client, users, monkeypatch):
    assert client.get("/readyz").json() == {"status": "ok", "broker": "ok"}
    monkeypatch.setattr("apps.common.views.connection", _DeadConnection())
    down = client.get("/readyz")
    assert down.status_code == 503 and down.json() == {"status": "not ok", "broker": "ok"}
    for secret in ("db.internal", "10.0.0.5", "5432", "kuae_prod", '"kuae"'):
        assert secret not in down.content.decode()


# --- the secret key -----------------------------------------------------------------------


def _key(var_dir: Path) -> str:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "KUAE_", "DATABASE"))
    }
    env.update(
        DJANGO_SETTINGS_MODULE="kuaeweb.settings", KUAE_TESTING="1", KUAE_VAR_DIR=str(var_dir)
    )
    code = "from django.conf import settings; print(settings.SECRET_KEY)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def test_testing_mode_uses_no_secret_from_the_source(tmp_path):
    source = (ROOT / "kuaeweb" / "settings.py").read_text()
    one, again, other = _key(tmp_path / "a"), _key(tmp_path / "a"), _key(tmp_path / "b")
    assert one == again != other  # shared by one var/ folder's processes, nowhere else
    assert len(one) >= 50 and one not in source
    assert (tmp_path / "a" / "secret_key").stat().st_mode & 0o077 == 0
    assert settings.SECRET_KEY not in source
