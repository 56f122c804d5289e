"""Serializer fields shared by the APIs."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from apps.common.hostnames import hostname_clean
from apps.common.limits import HOSTNAME_LENGTH


class ClusterNameField(serializers.SlugRelatedField):
    """A cluster named by `name`; a NUL character is refused before any lookup (PostgreSQL
    text cannot hold one, and the lookup would fail as a database error, not a 400)."""

    def __init__(self, **kwargs: Any) -> None:
        from apps.fleet.models import Cluster

        kwargs.setdefault("queryset", Cluster.objects.all())
        super().__init__(slug_field="name", **kwargs)

    def to_internal_value(self, data: Any) -> Any:
        """The cluster, or a 400 for this field."""
        if isinstance(data, str) and "\x00" in data:
            self.fail("invalid")
        return super().to_internal_value(data)


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
