"""Choices that carry their colour, so badges, tiles and chart traces agree everywhere."""

from __future__ import annotations

from django.db import models


class ColouredChoices(models.TextChoices):
    """TextChoices whose members have a `.colour`; subclasses define `palette()`."""

    @classmethod
    def palette(cls) -> dict[str, str]:
        raise NotImplementedError

    @property
    def colour(self) -> str:
        """The hex colour of this member (same in light and dark themes)."""
        return type(self).palette()[self.value]

    @classmethod
    def colour_map(cls) -> dict[str, str]:
        """value → colour, for Plotly traces and the generated stylesheet."""
        return {member.value: member.colour for member in cls}
