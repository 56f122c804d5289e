"""Roles (docs/api.md, Conventions) and the sets of roles each kind of action allows."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class Role(models.TextChoices):
    """What a user may do; see docs/api.md, Conventions."""

    MANAGER = "manager", _("Manager")
    OPERATOR = "operator", _("Operator")
    ENGINEER = "engineer", _("Engineer")
    AGENT = "agent", _("Agent")
    ADMIN = "admin", _("Admin")


# Each set includes the roles above it in the roles' ladder (manager < operator < engineer).
READERS = frozenset({Role.MANAGER, Role.OPERATOR, Role.ENGINEER, Role.ADMIN})
OPERATORS = frozenset({Role.OPERATOR, Role.ENGINEER, Role.ADMIN})
ENGINEERS = frozenset({Role.ENGINEER, Role.ADMIN})
AGENTS = frozenset({Role.AGENT, Role.ADMIN})
ADMINS = frozenset({Role.ADMIN})
