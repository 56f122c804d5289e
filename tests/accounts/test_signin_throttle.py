"""Sign-in throttling (issue 32, docs/operations.md, "Sign-in throttling"): a guesser
cannot lock a person out. Failures count per (account, client address); a browser that
signed in before carries a signed known-device cookie the count does not stop."""

from __future__ import annotations

import json

import pytest
from django.core import signing
from django.http import HttpResponse
from django.test import Client
from rest_framework.test import APIClient

from apps.accounts.models import ApiToken, AuditEvent, User
from apps.accounts.services import user_create_or_update

pytestmark = pytest.mark.django_db
A, B = "203.0.113.7", "198.51.100.20"  # the guesser's address, the person's other address
PW = "the right one"


@pytest.fixture
def manager(db) -> User:  # noqa: ANN001
    """`u_manager`, a manager, with password PW."""
    return user_create_or_update(
        username="u_manager", role="manager", password=PW, check_password=False
    )


def _at(address: str, *, secure: bool = False) -> Client:
    """A browser at `address`; `secure`: over HTTPS, as the proxy tells the app."""
    return Client(REMOTE_ADDR=address, **({"HTTP_X_FORWARDED_PROTO": "https"} if secure else {}))


def _login(client: Client, username: str, password: str, path: str = "/login/") -> HttpResponse:
    return client.post(path, {"username": username, "password": password})


def _signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def _guess(address: str, username: str = "u_manager", times: int = 6) -> None:
    guesser = _at(address)
    for _ in range(times):
        response = _login(guesser, username, "guess")
        assert response.status_code in (200, 429) and not _signed_in(guesser)


def _known_device(address: str) -> Client:
    """A browser at `address` that signed in as u_manager once and signed out."""
    browser = _at(address)
    assert _login(browser, "u_manager", PW).status_code == 302
    browser.post("/logout/")
    assert not _signed_in(browser) and "kuae_device" in browser.cookies
    return browser


def test_a_guesser_at_one_address_does_not_lock_the_person_out_elsewhere(manager):
    _guess(A)  # the replay: six wrong passwords (the limit is five)
    person = _at(B)
    assert _login(person, "u_manager", PW).status_code == 302 and _signed_in(person)
    # From A, a browser that never signed in is throttled: 429, the password unchecked.
    stranger = _at(A)
    blocked = _login(stranger, "u_manager", PW)
    assert blocked.status_code == 429 and not _signed_in(stranger)
    assert "Too many failed sign-ins" in blocked.content.decode()
    # The log keeps every failure and the refusal, with their addresses.
    failed = AuditEvent.objects.filter(kind="login_failed", username="u_manager")
    assert set(failed.values_list("ip", flat=True)) == {A} and failed.count() >= 5
    assert AuditEvent.objects.filter(kind="login_throttled", username="u_manager", ip=A).exists()
    assert AuditEvent.objects.filter(kind="login", username="u_manager", ip=B).exists()


def test_a_known_device_at_the_guessers_address_signs_in(manager):
    browser = _known_device(A)  # the person's browser, behind the same proxy as the guesser
    _guess(A)
    assert _login(_at(A), "u_manager", PW).status_code == 429  # a fresh browser is held
    assert _login(browser, "u_manager", PW).status_code == 302 and _signed_in(browser)


def test_a_known_device_is_no_unlimited_oracle(manager, settings):
    browser = _known_device(A)
    per_device = settings.KUAE_LOGIN_DEVICE_FAILURES
    for _ in range(per_device):  # its own failures are logged, under its device id
        assert _login(browser, "u_manager", "guess").status_code == 200
    device_failures = AuditEvent.objects.filter(kind="login_failed").exclude(device="")
    assert device_failures.count() == per_device
    # Past the device's own limit it is a browser like any other: the (account, address)
    # count, long since spent, holds it back.
    assert _login(browser, "u_manager", PW).status_code == 429 and not _signed_in(browser)
    # The person's other browsers are not: elsewhere they sign in.
    assert _login(_at(B), "u_manager", PW).status_code == 302


def test_spaces_and_case_count_against_the_same_account_and_address(manager):
    _guess(A, " U_MANAGER ", times=5)
    names = set(AuditEvent.objects.filter(kind="login_failed").values_list("username", flat=True))
    assert names == {"u_manager"}
    for name in ("u_manager", " U_MANAGER ", "U_Manager"):
        assert _login(_at(A), name, PW).status_code == 429
    assert _login(_at(B), "u_manager", PW).status_code == 302


def test_a_forged_or_tampered_device_cookie_gives_no_exemption(manager, users):
    mia = _at(A)  # mia's browser, behind the guesser's address, holds a genuine cookie
    assert _login(mia, "mia", "pw").status_code == 302
    genuine = mia.cookies["kuae_device"].value
    payload, stamp, signature = genuine.split(":")
    content = json.loads(signing.b64_decode(payload.encode()))
    assert content["users"] == ["mia"]
    _guess(A)
    refused_before = AuditEvent.objects.filter(kind="login_throttled").count()
    # mia's cookie rewritten to name u_manager, keeping mia's signature; mia's genuine one
    # (another account's device); one signed for another purpose; plain junk.
    tampered = signing.b64_encode(json.dumps({**content, "users": ["u_manager"]}).encode())
    other_salt = signing.dumps({"id": content["id"], "users": ["u_manager"]}, salt="other")
    for cookie in (
        f"{tampered.decode()}:{stamp}:{signature}",
        genuine,
        other_salt,
        '{"id":"x","users":["u_manager"]}',
    ):
        attacker = _at(A)
        attacker.cookies["kuae_device"] = cookie
        assert _login(attacker, "u_manager", PW).status_code == 429, cookie
        assert not _signed_in(attacker)
    # None of them was taken for a device: the refusals name none.
    refused = AuditEvent.objects.filter(kind="login_throttled")
    assert refused.count() == refused_before + 4 and set(
        refused.values_list("device", flat=True)
    ) == {""}


@pytest.mark.parametrize("secure", [False, True])
def test_the_device_cookie_is_signed_http_only_lax_and_secure_over_https(manager, secure):
    browser = _at(B, secure=secure)
    assert _login(browser, "u_manager", PW).status_code == 302
    cookie = browser.cookies["kuae_device"]
    assert cookie["httponly"] and cookie["samesite"] == "Lax"
    assert bool(cookie["secure"]) is secure
    assert int(cookie["max-age"]) == 90 * 86400
    content = signing.loads(cookie.value, salt="apps.accounts.audit.known-device")
    assert content["users"] == ["u_manager"] and len(content["id"]) >= 20
    # Signing in as another account keeps the browser's id and adds the account.
    browser.post("/logout/")
    user_create_or_update(username="mia", role="manager", password="pw", check_password=False)
    assert _login(browser, "mia", "pw").status_code == 302
    again = signing.loads(
        browser.cookies["kuae_device"].value, salt="apps.accounts.audit.known-device"
    )
    assert again == {"id": content["id"], "users": ["mia", "u_manager"]}


def test_admin_sign_in_follows_the_same_rules(users):
    _guess(A, "root")
    assert _login(_at(A), "root", "pw", "/admin/login/").status_code == 429
    assert _login(_at(B), "root", "pw", "/admin/login/").status_code == 302


def test_api_tokens_are_unaffected_by_the_sign_in_throttle(manager):
    _guess(A)
    api = APIClient(REMOTE_ADDR=A)
    api.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(manager)}")
    assert api.get("/api/v1/nodes/").status_code == 200
