"""`manage.py create_user NAME --role ROLE [--password PW]`: prints a fresh token last."""

from __future__ import annotations

import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.accounts.choices import Role
from apps.accounts.services import token_issue, user_create_or_update


class Command(BaseCommand):
    help = "Create or update a user with a role; print a fresh API token as the last line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=Role.values)
        parser.add_argument("--password", help="or set KUAE_PASSWORD, which stays out of `ps`")

    def handle(self, *args: Any, **opts: Any) -> None:
        password = opts["password"] or os.environ.get("KUAE_PASSWORD") or None
        try:
            user = user_create_or_update(
                username=opts["username"], role=opts["role"], password=password
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.stderr.write(f"user {user.username} has role {user.role}")
        self.stdout.write(token_issue(user=user))
