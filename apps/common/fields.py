"""Serializer fields shared by the APIs."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from apps.common.hostnames import hostname_clean, hostname_key
from apps.common.limits import HOSTNAME_LENGTH


class NodeNameField(serializers.CharField):
    """A hostname naming a node that should exist (its lookup says if it does not), in lower
    case: hostnames compare without regard to case (apps.common.hostnames)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", HOSTNAME_LENGTH)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        return hostname_key(super().to_internal_value(data))


class HostnameField(serializers.CharField):
    """A hostname that names a node for the first time: a DNS name (RFC 1123 labels, at most
    253 characters; apps.common.hostnames), or a 400 for this field saying why not."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", HOSTNAME_LENGTH)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        """The hostname, in lower case (hostnames compare without regard to case)."""
        value = super().to_internal_value(data)
        try:
            return hostname_clean(value)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from exc
