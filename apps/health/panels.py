"""Checks on another app's page, lent to `common/panels.py` at start-up: the node page
(fleet's) shows the node's check results, which it polls (docs/checks.md). The fleet knows
no check; the panel only reads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apps.common import panels
from apps.fleet.models import Node


def node_checks(*, node: Node, params: Mapping[str, str]) -> dict[str, Any]:
    """What the node page's checks panel needs: the node (its results are polled)."""
    return {"node": node}


def panels_lend() -> None:
    """Lend the panel (from `HealthConfig.ready()`): in the node page's body, between its
    GPU table (order 10) and its charts (30), both telemetry's."""
    panels.lend(
        slot=panels.NODE_BODY, template="health/_node_checks.html", context=node_checks, order=20
    )
