"""The demo's logins (KUAE_DEMO only): published, so the sign-in page may list them."""

from __future__ import annotations

from apps.accounts.choices import Role

DEMO_PASSWORD = "demo"
# The demo signs in as an operator, the role people live in; the other roles' logins let
# each view be tried; a second engineer reviews what the first writes (a postmortem is
# approved by an engineer who wrote none of it). (username, role)
DEMO_LOGINS: tuple[tuple[str, str], ...] = (
    ("demo", Role.OPERATOR),
    ("demo-manager", Role.MANAGER),
    ("demo-engineer", Role.ENGINEER),
    ("demo-reviewer", Role.ENGINEER),
    ("demo-admin", Role.ADMIN),
)
# The two engineers: one writes a postmortem, the other reviews it.
DEMO_AUTHOR, DEMO_REVIEWER = "demo-engineer", "demo-reviewer"
