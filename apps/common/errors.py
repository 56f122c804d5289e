"""API errors: every 4xx body names what was wrong; bad input never becomes a 500."""

from __future__ import annotations

import re
from typing import Any

from django.forms.utils import pretty_name


class BatchError(ValueError):
    """A batch was rejected; `errors` maps `samples[i].field` (or a field) to messages.

    A plain exception, so pure parsers can raise it without Django; the API's exception
    handler turns it into a 400 whose body is `errors`.
    """

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__(errors)
        self.errors = errors


class OutOfScope(Exception):
    """A write the caller's agent token may not make: it is outside the cluster or the nodes
    the token is scoped to (docs/operations.md#agent-tokens-and-scopes). The message names
    what was outside.

    A plain exception, so the scope checks (apps/fleet/scope.py, apps/jobs/scope.py) can be
    called from a service as well as a view; the API's exception handler turns it into a 403
    whose `detail` is the message.
    """


def exception_handler(exc: Exception, context: dict[str, Any]) -> Any:
    """DRF's handler, plus batch and model validation errors as a 400 naming the fields, and
    a write outside a token's scope as a 403."""
    from django.core.exceptions import ValidationError as DjangoValidationError
    from django.db import DataError, InterfaceError, OperationalError
    from rest_framework import status
    from rest_framework.exceptions import PermissionDenied
    from rest_framework.response import Response
    from rest_framework.views import exception_handler as drf_exception_handler

    from apps.common.dbconflicts import is_conflict

    if isinstance(exc, OperationalError) and is_conflict(exc):
        # The database is up; a concurrent write won (a deadlock, a serialisation failure, a
        # lock not available) and retries inside the server did not get past it: honest,
        # and still a 503, which clients retry.
        return Response(
            {"detail": "the write conflicted with concurrent writes and was not stored; retry"},
            status=503,
            headers={"Retry-After": "1"},
        )
    if isinstance(exc, OperationalError | InterfaceError):
        # The database is down or restarting: a transient failure the client should retry.
        return Response(
            {"detail": "database unavailable, retry"}, status=503, headers={"Retry-After": "5"}
        )
    if isinstance(exc, DataError):
        # A value the database cannot hold (out of range, a NUL in text) that got past the
        # field checks: the client's input, so a 400, never a 500.
        message = str(exc).splitlines()[0] if str(exc) else "invalid value"
        return Response({"detail": f"a value cannot be stored: {message}"}, status=400)
    if isinstance(exc, OverflowError):
        # SQLite cannot bind an integer past 64 bits: the client's number, so a 400 too.
        return Response({"detail": "a number is out of range"}, status=400)
    if isinstance(exc, BatchError):
        return Response(exc.errors, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, OutOfScope):
        # DRF's own 403 (its body, and the request's transaction marked for rollback).
        exc = PermissionDenied(str(exc))
    if isinstance(exc, DjangoValidationError):
        if hasattr(exc, "error_dict"):
            detail = exc.message_dict
        else:
            detail = {"non_field_errors": exc.messages}
        return Response(detail, status=status.HTTP_400_BAD_REQUEST)
    return drf_exception_handler(exc, context)


_FIELD_NAME = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
# Field names said otherwise on the page than `pretty_name` says them: the API keeps its
# `localized_at` (docs/api.md), the pages spell the word as the rest of them do (-ise).
FIELD_WORDS = {"localized_at": "Localised at"}


def field_word(name: str) -> str:
    """A field name as words on a page: "detected_at" → "Detected at"."""
    return FIELD_WORDS.get(name) or pretty_name(name)


def field_labels(form: Any = None) -> dict[str, str]:
    """Field name → what the form calls it (`detected_at` → "Detected at")."""
    if form is None:
        return {}
    return {name: str(f.label or field_word(name)) for name, f in form.fields.items()}


def plain_message(message: Any, labels: dict[str, str]) -> str:
    """A message with the field names it mentions as the form names them ("is before
    detected_at" → "is before Detected at"); names of timestamps (`…_at`) outside a form
    as words. Other words (slugs, hostnames) are left as they are."""

    def word(match: re.Match[str]) -> str:
        name = match.group(0)
        if name in labels:
            return labels[name]
        return field_word(name) if name.endswith("_at") else name

    return _FIELD_NAME.sub(word, str(message))


def errors_text(errors: Any, form: Any = None) -> str:
    """`{field: [messages]}` (a form's errors, a ValidationError's message_dict) as one line
    for a flash message, fields named as the form names them: `Detected at: message; …`."""
    labels = field_labels(form)
    parts = []
    for key, messages in errors.items():
        text = " ".join(plain_message(m, labels) for m in messages)
        if key in ("__all__", "non_field_errors"):
            parts.append(text)
        else:
            parts.append(f"{labels.get(key) or field_word(key)}: {text}")
    return "; ".join(parts)


def add_form_errors(form: Any, error: Any) -> None:
    """A service's ValidationError shown on the form: each message beside the field it
    names (or above the form), field names in the text as the form names them."""
    labels = field_labels(form)
    for field, messages in error.message_dict.items():
        target = field if field in form.fields else None
        form.add_error(target, [plain_message(m, labels) for m in messages])
