"""panva's oidc-provider (tests/oidc/provider.js) on a free loopback port, and a real HTTP
client that walks its authorization-code flow the way a browser does
(docs/sign-in.md, How it is tested). Absent Node.js or the npm package, the tests skip with
a reason, except under CI, where they fail."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import httpx
import pytest

from tests.binaries import stop, until
from tests.support import closed_port

HERE = Path(__file__).resolve().parent
PROVIDER_JS = HERE / "provider.js"
PACKAGE = HERE / "node_modules" / "oidc-provider" / "package.json"
CLIENT_ID = "kuae-ops"
CLIENT_SECRET = "kuae-ops-test-secret"

_FORM = re.compile(r'<form[^>]*action="([^"]+)"[^>]*method="post"', re.I)
_PROMPT = re.compile(r'name="prompt" value="([a-z]+)"')


def _absent(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"CI needs {why} (make test installs tests/oidc with npm ci)")
    pytest.skip(f"no {why} here (install Node.js and npm; make test runs npm ci in tests/oidc)")


class Provider:
    """oidc-provider serving `accounts` (username → claims), one client whose redirect URI
    is `redirect_uri`; `set_accounts` rewrites them for the next sign-in."""

    def __init__(self, workdir: Path, redirect_uri: str, accounts: dict[str, Any]) -> None:
        node = shutil.which("node")
        if node is None:
            _absent("Node.js")
        if not PACKAGE.exists():
            _absent("oidc-provider package (tests/oidc/node_modules)")
        self.port = closed_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.accounts_file = workdir / "accounts.json"
        self.log = workdir / "provider.log"
        self.set_accounts(accounts)
        env = {
            **os.environ,
            "OIDC_PORT": str(self.port),
            "OIDC_CLIENT_ID": CLIENT_ID,
            "OIDC_CLIENT_SECRET": CLIENT_SECRET,
            "OIDC_REDIRECT_URI": redirect_uri,
            "OIDC_ACCOUNTS": str(self.accounts_file),
        }
        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                [str(node), str(PROVIDER_JS)], env=env, stdout=log, stderr=subprocess.STDOUT
            )
        until(self._ready, "oidc-provider's discovery document", [self.log])

    def _ready(self) -> bool:
        if self.process.poll() is not None:
            pytest.fail(f"oidc-provider exited:\n{self.log.read_text()[-3000:]}")
        try:
            url = f"{self.issuer}/.well-known/openid-configuration"
            return httpx.get(url, timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def set_accounts(self, accounts: dict[str, Any]) -> None:
        """The directory's people and their claims, as the next sign-in will see them."""
        self.accounts_file.write_text(json.dumps(accounts))

    def close(self) -> None:
        """Stop the provider (the test started it)."""
        stop(self.process)


def sign_in(
    base_url: str,
    login: str,
    client: httpx.Client | None = None,
    before_return: Callable[[], None] | None = None,
) -> httpx.Response:
    """Press "Sign in with …" on KUAE's sign-in page and walk the provider's login and
    consent forms as `login`; the answer of KUAE's callback (not followed further).
    `before_return` runs when the provider sends the browser back, before KUAE sees it."""
    client = client or httpx.Client(timeout=30)
    page = client.get(f"{base_url}/login/")
    button = re.search(r'href="(/oidc/authenticate/[^"]*)"', page.text)
    assert button, "no 'Sign in with' button on the sign-in page"
    response = client.get(urljoin(base_url, button.group(1).replace("&amp;", "&")))
    for _ in range(20):
        if response.is_redirect:
            target = urljoin(str(response.url), response.headers["location"])
            if target.startswith(f"{base_url}/oidc/callback/"):
                if before_return is not None:
                    before_return()
                return client.get(target)
            response = client.get(target)
            continue
        form, prompt = _FORM.search(response.text), _PROMPT.search(response.text)
        if response.status_code != 200 or not form or not prompt:
            return response  # KUAE's own answer (the page saying why), or the provider's error
        data = {"prompt": prompt.group(1), "login": login, "password": "any"}
        response = client.post(urljoin(str(response.url), form.group(1)), data=data)
    raise AssertionError("the sign-in flow did not come back to KUAE")
