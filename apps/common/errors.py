"""API errors: every 4xx body names what was wrong; bad input never becomes a 500."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


class BatchError(exceptions.ValidationError):
    """A batch was rejected; `detail` maps `samples[i].field` (or a field) to messages."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__(errors)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, plus model validation errors turned into a 400 naming the fields."""
    if isinstance(exc, DjangoValidationError):
        detail = (
            exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        )
        return Response(detail, status=status.HTTP_400_BAD_REQUEST)
    return drf_exception_handler(exc, context)
