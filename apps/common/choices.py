"""Choices that carry their colour, so badges, tiles, stylesheet rules and chart traces agree
everywhere (docs/pages.md, Colours: one colour per state, defined next to its choices).

The hex values are written once, in `Hue`; each choices class picks its members' colours
from it in `palette()`. Every class registered with `@css_prefix` is in the stylesheet
generated at `/ui/colours.css` (`palette_css`): a class per value setting `--c` for badges,
tiles and swatches (`.state-down{--c:#d62728}`), and a custom property per value for the
rules of `static/css/app.css` that need one state's colour (`var(--res-fail)`). Charts read
`Member.colour` or `Class.colour_map()`. So a state's colour is one edit in its `palette()`.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import models


class Hue:
    """The named colours the palettes choose from (the same in light and dark themes)."""

    GREEN = "#2e9e4f"
    AMBER = "#d9a400"
    ORANGE = "#ef7d22"
    RED = "#d62728"
    GREY = "#8c8c8c"
    DARK_GREY = "#6b6b6b"
    STEEL = "#5b7fa6"
    SLATE = "#6b7fa3"
    BLUE = "#1f77b4"
    PURPLE = "#9467bd"
    BROWN = "#8c564b"
    CYAN = "#17becf"
    MID_GREY = "#7f7f7f"
    BRONZE = "#9a7b4f"
    VIVID_ORANGE = "#ff7f0e"


class ColouredChoices(models.TextChoices):
    """TextChoices whose members have a `.colour`; subclasses define `palette()`."""

    @classmethod
    def palette(cls) -> dict[str, str]:
        """value → hex colour, for every member (chosen from `Hue`)."""
        raise NotImplementedError

    @property
    def colour(self) -> str:
        """The hex colour of this member (same in light and dark themes)."""
        return type(self).palette()[self.value]

    @classmethod
    def colour_map(cls) -> dict[str, str]:
        """value → colour, for Plotly traces and the generated stylesheet."""
        return {member.value: member.colour for member in cls}


# CSS class prefix → choices: every app registers its coloured choices here (each app's
# `choices` module is imported at start-up, see `CommonConfig.ready`).
PALETTES: dict[str, type[ColouredChoices]] = {}


def css_prefix(prefix: str) -> Callable[[type[ColouredChoices]], type[ColouredChoices]]:
    """Register coloured choices under a CSS class prefix."""

    def register(cls: type[ColouredChoices]) -> type[ColouredChoices]:
        PALETTES[prefix] = cls
        return cls

    return register


def palette_css() -> str:
    """The stylesheet for every registered palette: on `:root` a custom property per value
    (`--state-down:#d62728`), then a class per value setting `--c` (`.state-down{--c:…}`)."""
    entries = [
        (f"{prefix}-{value}", colour)
        for prefix, choices in sorted(PALETTES.items())
        for value, colour in choices.colour_map().items()
    ]
    root = ":root{" + "".join(f"--{name}:{colour};" for name, colour in entries) + "}\n"
    rules = []
    for name, colour in entries:
        background, text = badge_colours(colour)
        rules.append(f".{name}{{--c:{colour};--c-bg:{background};--c-on:{text}}}\n")
    return root + "".join(rules)


INK, PAPER = "#1b1f24", "#ffffff"  # the two text colours a badge may use


def _luminance(colour: str) -> float:
    """WCAG relative luminance of `#rrggbb`."""

    def channel(i: int) -> float:
        c = int(colour[i : i + 2], 16) / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5)


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two `#rrggbb` colours (1 to 21)."""
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def badge_colours(colour: str, minimum: float = 4.5) -> tuple[str, str]:
    """(background, text) for a badge of `colour`: the text colour (ink or paper) that reads
    best on it, and — when neither reaches WCAG AA's 4.5:1 — the colour darkened step by step
    until white text does. The hue stays recognisable; the words become readable."""
    text = max((INK, PAPER), key=lambda t: contrast(colour, t))
    if contrast(colour, text) >= minimum:
        return colour, text
    red, green, blue = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    for step in range(1, 20):
        k = 1 - step * 0.05
        darker = f"#{int(red * k):02x}{int(green * k):02x}{int(blue * k):02x}"
        if contrast(darker, PAPER) >= minimum:
            return darker, PAPER
    return "#000000", PAPER


@css_prefix("tone")
class Tone(ColouredChoices):
    """What a message or a verdict says where no state of the domain applies: good (a change
    saved, a target met) or bad (a form error, a chart that failed, a target missed)."""

    GOOD = "good", "Good"
    BAD = "bad", "Bad"

    @classmethod
    def palette(cls) -> dict[str, str]:
        return {"good": Hue.GREEN, "bad": Hue.RED}


@css_prefix("series")
class Series(ColouredChoices):
    """Chart series: the same colour for the same figure on every page."""

    MFU = "mfu", "MFU"
    TOKENS_PER_S = "tokens_per_s", "tokens/s"
    LOSS = "loss", "loss"
    STEP_TIME_S = "step_time_s", "step time"
    TARGET = "target", "target"
    REFERENCE = "reference", "reference"
    MTTR = "mttr", "MTTR"
    TEMP_C = "temp_c", "GPU temperature"
    GPU_UTIL = "gpu_util", "GPU utilisation"
    POWER_W = "power_w", "power"

    @classmethod
    def palette(cls) -> dict[str, str]:
        return {
            "mfu": Hue.BLUE,
            "tokens_per_s": Hue.PURPLE,
            "loss": Hue.BROWN,
            "step_time_s": Hue.CYAN,
            "target": Hue.MID_GREY,
            "reference": Hue.BRONZE,
            "mttr": Hue.RED,
            "temp_c": Hue.RED,
            "gpu_util": Hue.BLUE,
            "power_w": Hue.VIVID_ORANGE,
        }
