"""Serializer fields that name the fleet's objects, shared by the APIs of the fleet and the
apps above it (jobs, incidents, health)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rest_framework import serializers

from apps.fleet.models import Cluster

if TYPE_CHECKING:
    _ClusterSlugField = serializers.SlugRelatedField[Cluster]
else:  # DRF's fields are generic only in its stubs
    _ClusterSlugField = serializers.SlugRelatedField


class ClusterNameField(_ClusterSlugField):
    """A cluster named by `name`, in answers (`read_only=True`) and in bodies; in a body a
    NUL character is refused before any lookup (PostgreSQL text cannot hold one, and the
    lookup would fail as a database error, not a 400)."""

    def __init__(self, **kwargs: Any) -> None:
        if not kwargs.get("read_only"):
            kwargs.setdefault("queryset", Cluster.objects.all())
        super().__init__(slug_field="name", **kwargs)

    def to_internal_value(self, data: Any) -> Cluster:
        """The cluster, or a 400 for this field."""
        if isinstance(data, str) and "\x00" in data:
            self.fail("invalid")
        return super().to_internal_value(data)
