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


# CSS class prefix → choices: every app registers its coloured choices here, and one
# generated stylesheet gives each value its colour (`.state-down{--c:#d62728}`).
PALETTES: dict[str, type[ColouredChoices]] = {}


def css_prefix(prefix: str):  # noqa: ANN201 - a class decorator
    """Register coloured choices under a CSS class prefix."""

    def register(cls: type[ColouredChoices]) -> type[ColouredChoices]:
        PALETTES[prefix] = cls
        return cls

    return register


def palette_css() -> str:
    """The stylesheet for every registered palette."""
    return "".join(
        f".{prefix}-{value}{{--c:{colour}}}\n"
        for prefix, choices in sorted(PALETTES.items())
        for value, colour in choices.colour_map().items()
    )
