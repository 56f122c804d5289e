"""Serializer fields shared by the APIs."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from apps.common.hostnames import hostname_clean
from apps.common.limits import HOSTNAME_LENGTH


class HostnameField(serializers.CharField):
    """A hostname that names a node for the first time: a DNS name (RFC 1123 labels, at most
    253 characters; apps.common.hostnames), or a 400 for this field saying why not."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", HOSTNAME_LENGTH)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        """The hostname as given."""
        value = super().to_internal_value(data)
        try:
            return hostname_clean(value)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from exc
