"""OpenID Connect sign-in against a real provider, panva's oidc-provider, run locally: the
role follows the groups claim at every sign-in, a person in no mapped group is refused with a
page that says why, a provider that is down is said as such and never a 500, and local
accounts keep working (docs/sign-in.md, OpenID Connect)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from apps.accounts.models import User
from apps.accounts.oidc import BACKEND, forget_discovery
from tests.oidc.support import CLIENT_ID, CLIENT_SECRET, Provider, sign_in
from tests.support import closed_port

pytestmark = pytest.mark.django_db(transaction=True)

ONCALL, MGMT = "gpu-oncall", "gpu-mgmt"
ACCOUNTS = {
    "alice": {"email": "alice@example.com", "given_name": "Alice", "groups": [ONCALL]},
    "bob": {"email": "bob@example.com", "groups": ["interns"]},
    "carol": {"email": "carol@example.com", "groups": [ONCALL]},
}


@pytest.fixture(scope="module")
def provider(live_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    running = Provider(
        tmp_path_factory.mktemp("oidc"), f"{live_server.url}/oidc/callback/", ACCOUNTS
    )
    yield running
    running.close()


def configure(settings: Any, issuer: str) -> None:
    """Turn OpenID Connect sign-in on, as KUAE_OIDC_* in the environment would."""
    settings.KUAE_OIDC_ISSUER = issuer
    settings.KUAE_OIDC_NAME = "Example SSO"
    settings.KUAE_OIDC_CLIENT_ID = CLIENT_ID
    settings.KUAE_OIDC_CLIENT_SECRET = CLIENT_SECRET
    settings.KUAE_OIDC_SCOPES = "openid email profile groups"
    settings.KUAE_ROLE_GROUPS = f"operator={ONCALL};manager={MGMT}"
    settings.AUTHENTICATION_BACKENDS = [*settings.AUTHENTICATION_BACKENDS, BACKEND]
    forget_discovery()


@pytest.fixture
def oidc(settings: Any, provider: Provider) -> Iterator[Provider]:
    configure(settings, provider.issuer)
    provider.set_accounts(ACCOUNTS)
    yield provider
    forget_discovery()


def test_role_follows_the_groups_claim_at_every_sign_in(live_server: Any, oidc: Provider) -> None:
    with httpx.Client(timeout=30) as client:
        answer = sign_in(live_server.url, "alice", client)
        assert answer.status_code == 302, answer.text[:2000]
        assert answer.headers["location"] == "/"
        overview = client.get(f"{live_server.url}/")
        assert overview.status_code == 200 and "alice" in overview.text
    alice = User.objects.get(username="alice")
    assert (alice.role, alice.email, alice.first_name) == ("operator", "alice@example.com", "Alice")
    assert not alice.has_usable_password()

    # The directory moves Alice to management: her next sign-in makes her a manager.
    oidc.set_accounts({**ACCOUNTS, "alice": {**ACCOUNTS["alice"], "groups": [MGMT]}})
    with httpx.Client(timeout=30) as client:
        answer = sign_in(live_server.url, "alice", client)
        assert answer.status_code == 302 and answer.headers["location"] == "/reports/weekly/"
    assert User.objects.get(username="alice").role == "manager"

    # In both groups: the higher role.
    oidc.set_accounts({**ACCOUNTS, "alice": {**ACCOUNTS["alice"], "groups": [MGMT, ONCALL]}})
    assert sign_in(live_server.url, "alice").status_code == 302
    assert User.objects.get(username="alice").role == "operator"


def test_no_mapped_group_is_refused_with_a_page_saying_why(
    live_server: Any, oidc: Provider
) -> None:
    answer = sign_in(live_server.url, "bob")
    assert answer.status_code == 403
    assert "No KUAE Ops role for bob" in answer.text
    assert "none of your groups gives a role" in answer.text
    assert "Wrong username or password" not in answer.text
    assert not User.objects.filter(username="bob").exists()

    # Someone who had a role and left every mapped group is refused too, role untouched.
    User.objects.create(username="dave", role="operator").set_unusable_password()
    oidc.set_accounts({**ACCOUNTS, "dave": {"groups": []}})
    answer = sign_in(live_server.url, "dave")
    assert answer.status_code == 403 and "No KUAE Ops role for dave" in answer.text


def test_provider_down_is_said_never_a_500(
    live_server: Any, oidc: Provider, settings: Any, tmp_path: Path
) -> None:
    # Down when the browser comes back: discovery was done, the token endpoint is gone.
    brief = Provider(tmp_path, f"{live_server.url}/oidc/callback/", ACCOUNTS)
    try:
        configure(settings, brief.issuer)
        answer = sign_in(live_server.url, "alice", before_return=brief.close)
    finally:
        brief.close()
    assert answer.status_code == 503, answer.text[:2000]
    assert "Example SSO cannot be reached" in answer.text
    assert not User.objects.filter(username="alice").exists()

    # Down before the sign-in starts: the button leads to a page that says so.
    configure(settings, f"http://127.0.0.1:{closed_port()}")
    answer = sign_in(live_server.url, "alice")
    assert answer.status_code == 503
    assert "Example SSO cannot be reached" in answer.text
    assert "local accounts still sign in" in answer.text


def test_local_accounts_keep_working(live_server: Any, oidc: Provider) -> None:
    User.objects.create_user("carol", password="a-long-local-passphrase", role="engineer")
    # The provider's carol does not take the local account over...
    answer = sign_in(live_server.url, "carol")
    assert answer.status_code == 403 and "carol is a local account" in answer.text
    assert User.objects.get(username="carol").role == "engineer"
    # ...and the password still signs carol in.
    with httpx.Client(timeout=30) as client:
        page = client.get(f"{live_server.url}/login/")
        assert "Sign in with Example SSO" in page.text
        token = client.cookies["csrftoken"]
        answer = client.post(
            f"{live_server.url}/login/",
            data={"username": "carol", "password": "a-long-local-passphrase"},
            headers={"X-CSRFToken": token, "Referer": f"{live_server.url}/login/"},
        )
        assert answer.status_code == 302, answer.text[:2000]


def test_off_unless_configured(client: Any, settings: Any, tmp_path: Path) -> None:
    settings.KUAE_OIDC_ISSUER = ""
    assert "Sign in with" not in client.get("/login/").content.decode()
    assert client.get("/oidc/authenticate/").status_code == 404
    assert client.get("/oidc/callback/?code=x&state=y").status_code == 404
