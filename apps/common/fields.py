"""Serializer fields shared by the APIs."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers


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
