"""A directory's groups to KUAE roles, shared by LDAP and OpenID Connect sign-in
(docs/sign-in.md).

`KUAE_ROLE_GROUPS` lists `role=group` entries separated by `;`, e.g.
`operator=cn=gpu-oncall,ou=groups,dc=example,dc=com;manager=cn=gpu-mgmt,ou=groups,dc=example,dc=com`.
A group is an LDAP DN or an OpenID Connect group claim's value; DNs compare without case
and without the spaces around their commas and equals signs. A person in several mapped
groups gets the highest role (manager < operator < engineer < admin); agents are never
made from a directory. The role follows the groups at every sign-in
(`apply_directory_role`); a person in no mapped group is refused (`NoMappedGroup`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from django.core.exceptions import ImproperlyConfigured, PermissionDenied

from apps.accounts.choices import Role

# The ladder a directory may grant, lowest first.
LADDER: tuple[str, ...] = (Role.MANAGER, Role.OPERATOR, Role.ENGINEER, Role.ADMIN)

_SPACES = re.compile(r"\s*([,=])\s*")


class NoMappedGroup(PermissionDenied):
    """The directory knows the person, but none of their groups maps to a role: refused
    with a page saying so (not the wrong-password page)."""

    def __init__(self, username: str, source: str) -> None:
        self.username = username
        self.source = source
        super().__init__(f"{username}: in no group of {source} that maps to a KUAE role")


def normalise_group(group: str) -> str:
    """The form groups compare in: lower case, no spaces around `,` and `=`."""
    return _SPACES.sub(r"\1", group.strip()).lower()


@dataclass(frozen=True)
class RoleGroups:
    """Parsed `KUAE_ROLE_GROUPS`: (role, normalised group) pairs, in the order given."""

    pairs: tuple[tuple[str, str], ...]

    @classmethod
    def parse(cls, text: str, *, setting: str = "KUAE_ROLE_GROUPS") -> RoleGroups:
        """Parse `role=group;role=group`; a malformed entry or an unknown role raises
        ImproperlyConfigured naming the entry (a site's typo fails at start-up, not at
        someone's sign-in)."""
        pairs: list[tuple[str, str]] = []
        for raw in text.split(";"):
            entry = raw.strip()
            if not entry:
                continue
            role, sep, group = entry.partition("=")
            role, group = role.strip().lower(), group.strip()
            if not sep or not group:
                raise ImproperlyConfigured(f"{setting}: {entry!r} is not role=group")
            if role not in LADDER:
                raise ImproperlyConfigured(
                    f"{setting}: {entry!r}: role must be one of {', '.join(LADDER)}"
                )
            pairs.append((role, normalise_group(group)))
        return cls(tuple(pairs))

    @property
    def groups(self) -> frozenset[str]:
        """Every mapped group, normalised."""
        return frozenset(group for _, group in self.pairs)

    def role_for(self, groups: Iterable[str]) -> str | None:
        """The highest role any of `groups` maps to; None when none maps."""
        have = {normalise_group(g) for g in groups}
        granted = [LADDER.index(role) for role, group in self.pairs if group in have]
        return LADDER[max(granted)] if granted else None


def apply_directory_role(user: object, role: str) -> bool:
    """Set `user`'s role to what their groups grant now; True when it changed (saved)."""
    if getattr(user, "role", None) == role:
        return False
    user.role = role  # type: ignore[attr-defined]
    user.save(update_fields=["role"])  # type: ignore[attr-defined]
    return True
