"""OpenID Connect sign-in (docs/sign-in.md, OpenID Connect): mozilla-django-oidc's
authorization-code flow, with the provider's endpoints discovered from its issuer and the
person's role taken from their groups claim at every sign-in.

Discovery is lazy: `{issuer}/.well-known/openid-configuration` is read at the first sign-in
that needs it and kept for `DISCOVERY_TTL_S` in the process; a provider that is down at that
moment is said as such on a page (`ProviderUnreachable`), and start-up never waits for it.
Building the backend (which Django does at every `authenticate()` and for every session's
user) touches no network.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, SuspiciousOperation
from django.db import transaction
from django.http import HttpRequest
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from apps.accounts.choices import Role
from apps.accounts.directory import NoMappedGroup, RoleGroups, apply_directory_role
from apps.accounts.models import User

DISCOVERY_TTL_S = 3600.0
BACKEND = "apps.accounts.oidc.DirectoryOIDCBackend"


def enabled() -> bool:
    """True when this site signs people in with OpenID Connect (KUAE_OIDC_ISSUER set)."""
    return bool(settings.KUAE_OIDC_ISSUER)


def provider_name() -> str:
    """What the sign-in page calls the provider (KUAE_OIDC_NAME)."""
    return str(settings.KUAE_OIDC_NAME)


class ProviderUnreachable(Exception):
    """The provider could not be asked (down, timed out, or answered with a server error)."""


class LocalAccountClash(PermissionDenied):
    """The provider's username is a local account (one with a password, or an agent): a
    directory never takes a local account over."""

    def __init__(self, username: str) -> None:
        self.username = username
        super().__init__(f"{username}: a local account, not signed in by the provider")


@dataclass(frozen=True)
class Endpoints:
    """What discovery tells: where to send the browser, and where the server asks."""

    authorization: str
    token: str
    userinfo: str
    jwks: str


_cache: dict[str, tuple[float, Endpoints]] = {}
_cache_lock = threading.Lock()


def discover(issuer: str | None = None) -> Endpoints:
    """The provider's endpoints from its discovery document, cached per issuer for
    DISCOVERY_TTL_S; a failure is not cached, and raises ProviderUnreachable."""
    issuer = (issuer or settings.KUAE_OIDC_ISSUER).rstrip("/")
    now = time.monotonic()
    with _cache_lock:
        hit = _cache.get(issuer)
    if hit and now - hit[0] < DISCOVERY_TTL_S:
        return hit[1]
    url = f"{issuer}/.well-known/openid-configuration"
    try:
        response = requests.get(url, timeout=settings.KUAE_OIDC_TIMEOUT_S)
        response.raise_for_status()
        doc = response.json()
        endpoints = Endpoints(
            authorization=doc["authorization_endpoint"],
            token=doc["token_endpoint"],
            userinfo=doc["userinfo_endpoint"],
            jwks=doc["jwks_uri"],
        )
    except (requests.RequestException, ValueError, KeyError, TypeError) as exc:
        raise ProviderUnreachable(f"{url}: {exc}") from exc
    with _cache_lock:
        _cache[issuer] = (now, endpoints)
    return endpoints


def forget_discovery() -> None:
    """Drop every cached discovery document (tests; a provider that moved)."""
    with _cache_lock:
        _cache.clear()


# mozilla-django-oidc's settings, read from KUAE's own (so that they follow the settings at
# the moment of asking); the endpoints come from discovery.
def _library_settings() -> dict[str, Any]:
    return {
        "OIDC_RP_CLIENT_ID": settings.KUAE_OIDC_CLIENT_ID,
        "OIDC_RP_CLIENT_SECRET": settings.KUAE_OIDC_CLIENT_SECRET,
        "OIDC_RP_SCOPES": settings.KUAE_OIDC_SCOPES,
        "OIDC_RP_SIGN_ALGO": settings.KUAE_OIDC_SIGN_ALGO,
        "OIDC_TIMEOUT": settings.KUAE_OIDC_TIMEOUT_S,
        "OIDC_USE_PKCE": True,
        "OIDC_TOKEN_USE_BASIC_AUTH": True,
        "OIDC_CREATE_USER": True,
        "LOGIN_REDIRECT_URL_FAILURE": settings.LOGIN_URL,
    }


def oidc_setting(attr: str, *default: Any) -> Any:
    """mozilla-django-oidc's `get_settings`, answered from KUAE's settings."""
    known = _library_settings()
    if attr in known:
        return known[attr]
    if attr == "OIDC_OP_AUTHORIZATION_ENDPOINT":
        return discover().authorization
    if default:
        return getattr(settings, attr, default[0])
    return getattr(settings, attr)


def groups_from(claims: dict[str, Any], claim: str) -> list[str]:
    """The groups claim as a list of strings (a provider may send one group as a string)."""
    value = claims.get(claim)
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [str(group) for group in value]
    return []


def role_groups() -> RoleGroups:
    """KUAE_ROLE_GROUPS, parsed (settings parse it at start-up, so a typo stops there)."""
    return RoleGroups.parse(settings.KUAE_ROLE_GROUPS)


class DirectoryOIDCBackend(OIDCAuthenticationBackend):
    """Signs a person in from the provider's answer: the user is made at their first
    sign-in and updated at every one (name, e-mail, role from the groups claim). A refusal
    or an unreachable provider marks the request (`REFUSAL`) so the callback page says why."""

    REFUSAL = "kuae_oidc_refusal"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # The library's __init__ reads the endpoints; discovery waits for a sign-in.
        self.UserModel = get_user_model()
        self.OIDC_RP_IDP_SIGN_KEY = None

    get_settings = staticmethod(oidc_setting)

    def authenticate(self, request: HttpRequest | None, **kwargs: Any) -> User | None:  # type: ignore[override]
        """The code flow's second half; None for anything that is not the callback."""
        if request is None or not enabled():
            return None
        if not request.GET.get("code") or not request.GET.get("state"):
            return None
        self.OIDC_RP_CLIENT_ID = settings.KUAE_OIDC_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.KUAE_OIDC_CLIENT_SECRET
        self.OIDC_RP_SIGN_ALGO = settings.KUAE_OIDC_SIGN_ALGO
        try:
            endpoints = discover()
            self.OIDC_OP_TOKEN_ENDPOINT = endpoints.token
            self.OIDC_OP_USER_ENDPOINT = endpoints.userinfo
            self.OIDC_OP_JWKS_ENDPOINT = endpoints.jwks
            return super().authenticate(request, **kwargs)  # type: ignore[no-any-return]
        except ProviderUnreachable as exc:
            setattr(request, self.REFUSAL, exc)
        except (requests.ConnectionError, requests.Timeout) as exc:
            setattr(request, self.REFUSAL, ProviderUnreachable(str(exc)))
        except requests.HTTPError as exc:
            status = exc.response.status_code if exc.response is not None else 0
            if status >= 500:
                setattr(request, self.REFUSAL, ProviderUnreachable(str(exc)))
            # a 4xx (a code used twice, a wrong client secret): the generic failure page
        except (NoMappedGroup, LocalAccountClash) as exc:
            setattr(request, self.REFUSAL, exc)
        raise PermissionDenied("OpenID Connect sign-in refused")  # audited as a failure

    def verify_token(self, token: str, **kwargs: Any) -> dict[str, Any]:
        """The library checks the signature and nonce; this adds the issuer and audience."""
        payload: dict[str, Any] = super().verify_token(token, **kwargs)
        if kwargs.get("nonce") is None:
            return payload  # a userinfo answer signed as a JWT
        audience = payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if str(payload.get("iss", "")).rstrip("/") != settings.KUAE_OIDC_ISSUER.rstrip("/"):
            raise SuspiciousOperation("ID token from another issuer")
        if settings.KUAE_OIDC_CLIENT_ID not in audiences:
            raise SuspiciousOperation("ID token for another client")
        return payload

    def get_userinfo(
        self, access_token: str, id_token: str, payload: dict[str, Any]
    ) -> dict[str, Any]:
        """The ID token's claims and the userinfo answer's together (some providers put
        the groups in one, some in the other)."""
        userinfo: dict[str, Any] = super().get_userinfo(access_token, id_token, payload)
        return {**payload, **userinfo}

    def verify_claims(self, claims: dict[str, Any]) -> bool:
        """A sign-in needs a username claim; e-mail is optional."""
        return bool(self.username_from(claims))

    @staticmethod
    def username_from(claims: dict[str, Any]) -> str:
        """The username: KUAE_OIDC_USERNAME_CLAIM (preferred_username), else `sub`."""
        name = claims.get(settings.KUAE_OIDC_USERNAME_CLAIM) or claims.get("sub") or ""
        return str(name)[:150]

    def get_or_create_user(
        self, access_token: str, id_token: str, payload: dict[str, Any]
    ) -> User | None:
        """The user for these claims, made or updated, with the role their groups grant
        now; refused (NoMappedGroup) when none maps, before anything is written."""
        claims = self.get_userinfo(access_token, id_token, payload)
        username = self.username_from(claims)
        if not username:
            raise SuspiciousOperation("no username claim")
        role = role_groups().role_for(groups_from(claims, settings.KUAE_OIDC_GROUPS_CLAIM))
        if role is None:
            raise NoMappedGroup(username, provider_name())
        with transaction.atomic():
            user = User.objects.select_for_update().filter(username=username).first()
            if user is None:
                user = User(username=username, role=role)
                user.set_unusable_password()
            elif user.has_usable_password() or user.role == Role.AGENT:
                raise LocalAccountClash(username)
            user.email = str(claims.get("email") or user.email)
            user.first_name = str(claims.get("given_name") or user.first_name)[:150]
            user.last_name = str(claims.get("family_name") or user.last_name)[:150]
            user.save()
            apply_directory_role(user, role)
        return user
