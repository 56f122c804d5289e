"""`preflight`: what should stop a job from starting (docs/checks.md, `preflight`). No incident."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from apps.fleet.choices import NodeState


def preflight(
    nodes: Sequence[tuple[str, str, str]], recent_fails: Mapping[str, Sequence[str]]
) -> list[dict[str, str]]:
    """Problems that should stop a job from starting: a node that is not healthy, or that
    failed a check in the last hour. `nodes` are (hostname, state, reason)."""
    problems = []
    for hostname, state, reason in nodes:
        if state != NodeState.HEALTHY:
            said = f"state {state}" + (f": {reason}" if reason else "")
            problems.append({"node": hostname, "reason": said})
        for kind in recent_fails.get(hostname, []):
            problems.append(
                {"node": hostname, "reason": f"failed the {kind} check in the last hour"}
            )
    return problems
