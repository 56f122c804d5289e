"""Registries a lower app reads and the apps above it fill at start-up, checked at start-up.

A lower app may not import the apps above it, so they lend it readers, panels and
followers from their `AppConfig.ready()` (docs/architecture.md, Readers lent downwards).
A registry nobody filled — a `ready()` forgotten or not run — must not answer "nothing"
as if the fleet had no incident or no window: each registry is a `Registry`, which names
what it holds and the app that lends each entry. Reading an entry nobody lent raises
`ImproperlyConfigured` naming both, and the system check `lending_complete` (run by
`manage.py check`, `migrate` and `runserver`) fails start-up on every entry left unlent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.checks import CheckMessage, Error, register
from django.core.exceptions import ImproperlyConfigured

_registries: list[Registry] = []


class Registry(dict[str, Any]):
    """A dict of what apps above lend to `name`, keyed by entry. `lenders` maps every
    entry that must be lent to the app (or apps) that lend it; reading an entry absent
    raises `ImproperlyConfigured` instead of answering nothing."""

    def __init__(self, name: str, *, lenders: Mapping[str, str]) -> None:
        super().__init__()
        self.name = name
        self.lenders = dict(lenders)
        _registries.append(self)

    def __missing__(self, key: str) -> Any:  # noqa: ANN401 - whatever was lent
        raise ImproperlyConfigured(self.message(key))

    def message(self, key: str) -> str:
        """What to say of `key` left unlent: the registry, the entry and who lends it."""
        by = self.lenders.get(key, "an app above it")
        return (
            f"{self.name}: nothing was lent to {key!r}; {by} lends it from its "
            "AppConfig.ready() (is the app installed and its ready() run?)"
        )

    def unlent(self) -> list[str]:
        """The entries that must be lent and were not, in declaration order."""
        return [key for key in self.lenders if key not in self]

    def require(self) -> None:
        """Raise `ImproperlyConfigured` for the first entry that must be lent and was not
        (for a registry read whole, as a list of followers, rather than by entry)."""
        for key in self.unlent():
            raise ImproperlyConfigured(self.message(key))


def registries() -> list[Registry]:
    """Every registry declared so far (their modules imported)."""
    return list(_registries)


@register("kuae")
def lending_complete(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:  # noqa: ANN401
    """One error per registry entry nobody lent (common.E001)."""
    return [
        Error(
            registry.message(key),
            hint=f"Call {registry.name}.lend(...) from {registry.lenders[key]}'s "
            "AppConfig.ready().",
            obj=registry.name,
            id="common.E001",
        )
        for registry in _registries
        for key in registry.unlent()
    ]
