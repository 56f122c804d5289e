"""Role checks for API views and pages (docs/api.md, Conventions)."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import TYPE_CHECKING, Any

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

if TYPE_CHECKING:
    from rest_framework.views import APIView

from apps.accounts import scoping
from apps.accounts.choices import READERS, Role
from apps.accounts.models import User


class RolePermission(BasePermission):
    """Allow a request when the user's role is in the view's `roles[METHOD]`.

    Views declare `roles = {"GET": READERS, "POST": OPERATORS}`; a method not listed is
    refused. Unauthenticated requests fail with 401 (token auth is the first class). A scoped
    agent token is refused on any view that does not declare `agent_scoped = True` — that
    it checks the scope (apps/fleet/scope.py, apps/jobs/scope.py) before it writes.
    """

    def has_permission(self, request: Request, view: APIView) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False
        roles: dict[str, frozenset[str]] = getattr(view, "roles", {})
        method = "GET" if request.method in ("HEAD", "OPTIONS") else request.method
        allowed = roles.get(method or "")
        if not (allowed and user.has_role(allowed)):
            return False
        return getattr(view, "agent_scoped", False) or not scoping.is_scoped(user)


def role_required(
    roles: frozenset[str] = READERS,
) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """Page decorator: anonymous → login page; signed in without the role → 403."""

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            user = request.user
            if not user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not user.has_role(roles):  # type: ignore[union-attr]
                raise PermissionDenied("your role may not open this page")
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


def user_has_role(user: object, roles: frozenset[str]) -> bool:
    """Whether a request's user (signed in or anonymous) has one of `roles`."""
    has_role = getattr(user, "has_role", None)
    return bool(has_role and has_role(roles))


def acting_user(request: HttpRequest | Request) -> User:
    """The signed-in user of a request a role check let through, typed as such (the 403 is
    for a view that forgot its `roles`)."""
    user = request.user
    if not isinstance(user, User):
        raise PermissionDenied("sign in first")
    return user


def answers_objects(user: Any) -> bool:
    """Whether a write answers with the object it wrote: not for agents, who never read
    (a write answers its status and counts; docs/operations.md#agent-tokens-and-scopes)."""
    return getattr(user, "role", None) != Role.AGENT
