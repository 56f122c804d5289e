"""API errors: every 4xx body names what was wrong; bad input never becomes a 500."""

from __future__ import annotations

from typing import Any


class BatchError(ValueError):
    """A batch was rejected; `errors` maps `samples[i].field` (or a field) to messages.

    A plain exception, so pure parsers can raise it without Django; the API's exception
    handler turns it into a 400 whose body is `errors`.
    """

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__(errors)
        self.errors = errors


def exception_handler(exc: Exception, context: dict[str, Any]) -> Any:
    """DRF's handler, plus batch and model validation errors as a 400 naming the fields."""
    from django.core.exceptions import ValidationError as DjangoValidationError
    from django.db import DataError, InterfaceError, OperationalError
    from rest_framework import status
    from rest_framework.response import Response
    from rest_framework.views import exception_handler as drf_exception_handler

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
    if isinstance(exc, DjangoValidationError):
        if hasattr(exc, "error_dict"):
            detail = exc.message_dict
        else:
            detail = {"non_field_errors": exc.messages}
        return Response(detail, status=status.HTTP_400_BAD_REQUEST)
    return drf_exception_handler(exc, context)


def errors_text(errors: Any) -> str:
    """`{field: [messages]}` (a form's errors, a ValidationError's message_dict) as one line
    for a flash message: `field: message; other: message`."""
    return "; ".join(f"{k}: {' '.join(str(m) for m in v)}" for k, v in errors.items())
