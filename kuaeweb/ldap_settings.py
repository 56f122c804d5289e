"""LDAP / Active Directory sign-in's settings from the environment (docs/sign-in.md): off
unless `KUAE_LDAP_URL` is set; then every mistake stops start-up with a message naming the
variable, python-ldap missing included."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured

from kuaeweb.env import env_bool, env_int, env_secret, env_str

BACKEND = "apps.accounts.ldap_backend.DirectoryBackend"
GROUP_MODES = ("member", "memberof")
MISSING = (
    "KUAE_LDAP_URL is set but python-ldap and django-auth-ldap are not installed: install "
    "OpenLDAP's and SASL's headers (Debian: apt-get install libldap2-dev libsasl2-dev), then "
    "`pip install --require-hashes -r requirements-ldap.lock` (make does it once "
    "/usr/include/ldap.h is there: rm .venv/.installed and run make again)"
)


def _required(name: str) -> str:
    value = env_str(name).strip()
    if not value:
        raise ImproperlyConfigured(f"KUAE_LDAP_URL is set but {name} is empty")
    return value


def ldap_settings() -> dict[str, Any]:
    """The `AUTH_LDAP_*` settings of django-auth-ldap and KUAE's own `KUAE_LDAP_*`, or {}
    when `KUAE_LDAP_URL` is unset (LDAP sign-in off)."""
    url = env_str("KUAE_LDAP_URL").strip()
    if not url:
        return {}
    try:
        import ldap
        from django_auth_ldap.config import LDAPSearch
    except ImportError as exc:
        raise ImproperlyConfigured(MISSING) from exc
    # Checked now, so a typo fails at start-up rather than at someone's sign-in.
    from apps.accounts.directory import RoleGroups

    if not RoleGroups.parse(env_str("KUAE_ROLE_GROUPS")).pairs:
        raise ImproperlyConfigured(
            "KUAE_LDAP_URL is set but KUAE_ROLE_GROUPS maps no group: everyone would be refused"
        )
    user_filter = env_str("KUAE_LDAP_USER_FILTER", "(uid=%(user)s)").strip()
    if "%(user)s" not in user_filter:
        raise ImproperlyConfigured(
            f"KUAE_LDAP_USER_FILTER={user_filter!r} must contain %(user)s (e.g. (uid=%(user)s))"
        )
    mode = env_str("KUAE_LDAP_GROUPS", "member").strip().lower()
    if mode not in GROUP_MODES:
        raise ImproperlyConfigured(f"KUAE_LDAP_GROUPS={mode!r}: use member or memberOf")
    group_base = env_str("KUAE_LDAP_GROUP_SEARCH_BASE").strip()
    if mode == "member" and not group_base:
        raise ImproperlyConfigured(
            "KUAE_LDAP_GROUPS=member needs KUAE_LDAP_GROUP_SEARCH_BASE (where the groups are)"
        )
    timeout = env_int("KUAE_LDAP_TIMEOUT_S", 5, minimum=1)
    options: dict[int, Any] = {
        ldap.OPT_NETWORK_TIMEOUT: timeout,
        ldap.OPT_TIMEOUT: timeout,
        ldap.OPT_REFERRALS: 0,  # Active Directory's referrals lead nowhere KUAE can bind
    }
    ca_file = env_str("KUAE_LDAP_CA_FILE").strip()
    if ca_file:
        options[ldap.OPT_X_TLS_CACERTFILE] = ca_file
        options[ldap.OPT_X_TLS_NEWCTX] = 0
    attrs = ["*", "memberOf"] if mode == "memberof" else None  # memberOf is operational
    return {
        "AUTH_LDAP_SERVER_URI": url,
        "AUTH_LDAP_BIND_DN": env_str("KUAE_LDAP_BIND_DN"),
        "AUTH_LDAP_BIND_PASSWORD": env_secret("KUAE_LDAP_BIND_PASSWORD"),
        "AUTH_LDAP_USER_SEARCH": LDAPSearch(
            _required("KUAE_LDAP_USER_SEARCH_BASE"), ldap.SCOPE_SUBTREE, user_filter, attrs
        ),
        "AUTH_LDAP_USER_ATTR_MAP": {"first_name": "givenName", "last_name": "sn", "email": "mail"},
        "AUTH_LDAP_ALWAYS_UPDATE_USER": True,
        "AUTH_LDAP_START_TLS": env_bool("KUAE_LDAP_START_TLS", False),
        "AUTH_LDAP_CONNECTION_OPTIONS": options,
        "KUAE_LDAP_GROUPS": mode,
        "KUAE_LDAP_GROUP_SEARCH_BASE": group_base,
        "KUAE_LDAP_GROUP_FILTER": env_str("KUAE_LDAP_GROUP_FILTER", "(objectClass=groupOfNames)"),
    }
