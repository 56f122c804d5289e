"""Checks on other apps' pages, lent to `common/panels.py` at start-up: the node page
(fleet's) shows the node's check results, the job page (jobs') its nodes ranked by
suspicion, both polled (docs/checks.md). Neither app knows a check; the panels only read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apps.common import panels
from apps.fleet.models import Node
from apps.jobs.models import Job


def node_checks(*, node: Node, params: Mapping[str, str]) -> dict[str, Any]:
    """What the node page's checks panel needs: the node (its results are polled)."""
    return {"node": node}


def job_suspects(*, job: Job) -> dict[str, Any]:
    """What the job page's suspects card needs: the job (its nodes' ranking is polled)."""
    return {"job": job}


def panels_lend() -> None:
    """Lend the panels (from `HealthConfig.ready()`): in the node page's body, between its
    GPU table (order 10) and its charts (30), both telemetry's; on the job page, after its
    ranks card."""
    panels.lend(
        slot=panels.NODE_BODY, template="health/_node_checks.html", context=node_checks, order=20
    )
    panels.lend(
        slot=panels.JOB_BELOW, template="health/_job_suspects_card.html", context=job_suspects
    )
