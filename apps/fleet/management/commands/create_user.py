"""`manage.py create_user NAME --role ROLE [--password PW]`: prints a fresh token last.

An agent's scope (docs/operations.md#agent-tokens-and-scopes): `--cluster NAME [--nodes
HOSTLIST]` limits its token to that cluster, or to those nodes of it; `--fleet` makes it a
whole-fleet relay again; with neither, an existing agent keeps the scope it had.

The fleet's command, not accounts': creating an agent sets where it may write, which names
a cluster and its nodes, and accounts imports no app above common."""

from __future__ import annotations

import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from apps.accounts.choices import Role
from apps.accounts.services import token_issue, user_create_or_update
from apps.fleet.models import AgentScope, describe_scope
from apps.fleet.services import agent_scope_set


class Command(BaseCommand):
    help = "Create or update a user with a role; print a fresh API token as the last line."

    def add_arguments(self, parser: CommandParser) -> None:
        """The user, its role and password, and an agent's scope."""
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=Role.values)
        parser.add_argument("--password", help="or set KUAE_PASSWORD, which stays out of `ps`")
        where = parser.add_mutually_exclusive_group()
        where.add_argument("--cluster", help="agent: write for this cluster only")
        where.add_argument(
            "--fleet", action="store_true", help="agent: write for the whole fleet (a relay)"
        )
        parser.add_argument(
            "--nodes", help="agent, with --cluster: write for these nodes only (gpu[001-004])"
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        """Create or update the user (and an agent's scope) in one transaction, then print
        what it may do and, last, a fresh token."""
        password = opts["password"] or os.environ.get("KUAE_PASSWORD") or None
        scoped = opts["cluster"] or opts["fleet"]
        if opts["nodes"] and not opts["cluster"]:
            raise CommandError("--nodes needs --cluster (the cluster the nodes are in)")
        if scoped and opts["role"] != Role.AGENT:
            raise CommandError("--cluster, --nodes and --fleet are for --role agent")
        try:
            with transaction.atomic():  # a refused scope leaves no unscoped agent behind
                user = user_create_or_update(
                    username=opts["username"], role=opts["role"], password=password
                )
                if scoped:
                    agent_scope_set(
                        user=user, cluster=opts["cluster"], hostlist=opts["nodes"] or ""
                    )
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        line = f"user {user.username} has role {user.role}"
        if user.role == Role.AGENT:
            scope = AgentScope.objects.select_related("cluster").filter(user=user).first()
            line += f", writing for {describe_scope(scope)}"
        self.stderr.write(line)
        self.stdout.write(token_issue(user=user))
