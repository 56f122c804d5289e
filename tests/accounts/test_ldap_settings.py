"""LDAP sign-in's settings (docs/sign-in.md): off unless KUAE_LDAP_URL is set; then each
mistake stops start-up with a message naming the variable, python-ldap missing included."""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from kuaeweb.ldap_settings import ldap_settings

BASE_ENV = {
    "KUAE_LDAP_URL": "ldap://127.0.0.1:1",
    "KUAE_LDAP_USER_SEARCH_BASE": "ou=people,dc=example,dc=com",
    "KUAE_LDAP_GROUP_SEARCH_BASE": "ou=groups,dc=example,dc=com",
    "KUAE_ROLE_GROUPS": "operator=cn=gpu-oncall,ou=groups,dc=example,dc=com",
}


def needs_python_ldap() -> None:
    """Skip without python-ldap (requirements-ldap.lock), except under CI, which has it."""
    if importlib.util.find_spec("ldap") is None:
        if os.environ.get("CI"):
            pytest.fail("CI needs python-ldap (.ci/run installs libldap2-dev, make the rest)")
        pytest.skip("python-ldap not installed (apt-get install libldap2-dev libsasl2-dev)")


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """A site's LDAP environment that `ldap_settings` accepts; tests spoil one variable."""
    for name in ("KUAE_LDAP_BIND_PASSWORD", "KUAE_LDAP_BIND_PASSWORD_FILE", "KUAE_LDAP_GROUPS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in BASE_ENV.items():
        monkeypatch.setenv(name, value)
    return monkeypatch


def test_off_unless_the_url_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUAE_LDAP_URL", raising=False)
    assert ldap_settings() == {}


def test_python_ldap_missing_stops_start_up_saying_how_to_install(env) -> None:  # noqa: ANN001
    env.setitem(sys.modules, "ldap", None)  # as on a machine without OpenLDAP's headers
    with pytest.raises(ImproperlyConfigured, match="python-ldap .* not installed.*libldap2-dev"):
        ldap_settings()


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("KUAE_LDAP_USER_SEARCH_BASE", "", "KUAE_LDAP_USER_SEARCH_BASE is empty"),
        ("KUAE_LDAP_USER_FILTER", "(uid=ada)", "KUAE_LDAP_USER_FILTER=.* must contain"),
        ("KUAE_LDAP_GROUPS", "nested", "KUAE_LDAP_GROUPS='nested': use member or memberOf"),
        ("KUAE_LDAP_GROUP_SEARCH_BASE", "", "needs KUAE_LDAP_GROUP_SEARCH_BASE"),
        ("KUAE_ROLE_GROUPS", "", "KUAE_ROLE_GROUPS maps no group"),
        ("KUAE_ROLE_GROUPS", "boss=cn=x", "role must be one of"),
        ("KUAE_LDAP_BIND_PASSWORD_FILE", "/nonexistent/pw", "KUAE_LDAP_BIND_PASSWORD_FILE"),
    ],
)
def test_a_mistake_stops_start_up_naming_the_variable(env, name, value, message) -> None:  # noqa: ANN001
    needs_python_ldap()
    env.setenv(name, value)
    with pytest.raises(ImproperlyConfigured, match=message):
        ldap_settings()


def test_active_directory_settings(env) -> None:  # noqa: ANN001
    needs_python_ldap()
    env.setenv("KUAE_LDAP_USER_FILTER", "(sAMAccountName=%(user)s)")
    env.setenv("KUAE_LDAP_GROUPS", "memberOf")
    env.delenv("KUAE_LDAP_GROUP_SEARCH_BASE")
    found = ldap_settings()
    assert found["KUAE_LDAP_GROUPS"] == "memberof"
    assert found["AUTH_LDAP_USER_SEARCH"].filterstr == "(sAMAccountName=%(user)s)"
    assert "memberOf" in found["AUTH_LDAP_USER_SEARCH"].attrlist
