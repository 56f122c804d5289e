"""Slurm node records → what KUAE keeps of them (docs/slurm.md, The live sync). Pure.

Accepted: `sinfo --json` of Slurm 22.05 (`{nodes: [...]}`, a lower-case `state` and a
`state_flags` list), slurmrestd `/slurm/v0.0.38…/nodes` (the same records), and the
23.x–25.x shapes (`state` a list such as `["IDLE", "DRAIN"]`; `sinfo -N --json`'s
`{sinfo: [{nodes: {nodes: [name]}, node: {state: [...]}, reason: ...}]}`; numbers wrapped as
`{set, infinite, number}`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

# A node Slurm will not place work on, and what KUAE calls it.
OUT_OF_SERVICE = {"DRAIN": "drained", "DRAINED": "drained", "DRAINING": "drained", "DOWN": "down"}
MAX_NODES = 100_000


class SlurmFormatError(ValueError):
    """The answer is not a Slurm node listing."""


@dataclass(frozen=True)
class SlurmNode:
    """One node as Slurm sees it."""

    name: str
    states: tuple[str, ...]  # base state first, then flags, upper case: ("IDLE", "DRAIN")
    reason: str = ""
    reason_by: str = ""
    reason_at: dt.datetime | None = None
    gpus: int | None = None

    @property
    def label(self) -> str:
        """Slurm's state as `sinfo` writes it: `idle+drain`."""
        return "+".join(s.lower() for s in self.states)

    @property
    def kuae_state(self) -> str | None:
        """`drained` or `down` when Slurm keeps work off the node, else None. DOWN wins."""
        found = {OUT_OF_SERVICE[s] for s in self.states if s in OUT_OF_SERVICE}
        return "down" if "down" in found else ("drained" if found else None)


def parse_nodes(payload: Any) -> list[SlurmNode]:
    """Every node record of a listing, in order; SlurmFormatError if it is not one."""
    if not isinstance(payload, dict):
        raise SlurmFormatError("expected a JSON object with 'nodes' or 'sinfo'")
    if isinstance(payload.get("nodes"), list):
        records = [_from_node(r) for r in payload["nodes"]]
    elif isinstance(payload.get("sinfo"), list):
        records = [n for r in payload["sinfo"] for n in _from_sinfo(r)]
    else:
        raise SlurmFormatError("expected a JSON object with 'nodes' or 'sinfo'")
    if len(records) > MAX_NODES:
        raise SlurmFormatError(f"more than {MAX_NODES:,} node records")
    return [r for r in records if r is not None]


def _number(value: Any) -> Any:
    if isinstance(value, dict):
        return value.get("number") if value.get("set", True) else None
    return value


def _states(state: Any, flags: Any) -> tuple[str, ...]:
    items = state if isinstance(state, list) else [state]
    items += flags if isinstance(flags, list) else []
    out: list[str] = []
    for item in items:
        # 22.05 writes "down*" for a down node that does not respond, "drain" as a flag
        name = str(item or "").strip().rstrip("*~#!%$@^-").upper()
        if name and name not in out:
            out.append(name)
    return tuple(out)


def _reason(value: Any, by: Any = "", at: Any = None) -> tuple[str, str, dt.datetime | None]:
    if isinstance(value, dict):  # 24.11+: {description, user, time}
        by, at, value = value.get("user", by), value.get("time", at), value.get("description")
    seconds = _number(at)
    when = (
        dt.datetime.fromtimestamp(seconds, tz=dt.UTC)
        if isinstance(seconds, int) and not isinstance(seconds, bool) and seconds > 0
        else None
    )
    return str(value or "")[:300], str(by or "")[:64], when


def _gpus(gres: Any) -> int | None:
    """`gpu:8`, `gpu:h100:8(S:0-1)`, `tmpsize:7T,gpu:l40s:4` → the GPU count."""
    if isinstance(gres, dict):
        gres = gres.get("total")
    if not isinstance(gres, str):
        return None
    total = 0
    for part in gres.split(","):
        fields = part.split("(")[0].split(":")
        if fields[0] == "gpu" and len(fields) >= 2 and fields[-1].isdigit():
            total += int(fields[-1])
    return total or None


def _from_node(raw: Any) -> SlurmNode | None:
    if not isinstance(raw, dict) or not raw.get("name"):
        return None
    reason, by, at = _reason(
        raw.get("reason"), raw.get("reason_set_by_user"), raw.get("reason_changed_at")
    )
    return SlurmNode(
        name=str(raw["name"]),
        states=_states(raw.get("state"), raw.get("state_flags")),
        reason=reason,
        reason_by=by,
        reason_at=at,
        gpus=_gpus(raw.get("gres")),
    )


def _from_sinfo(raw: Any) -> list[SlurmNode]:
    if not isinstance(raw, dict):
        return []
    names = (raw.get("nodes") or {}).get("nodes") if isinstance(raw.get("nodes"), dict) else None
    state = (raw.get("node") or {}).get("state") if isinstance(raw.get("node"), dict) else None
    reason, by, at = _reason(raw.get("reason"))
    return [
        SlurmNode(
            name=str(name),
            states=_states(state, None),
            reason=reason,
            reason_by=by,
            reason_at=at,
            gpus=_gpus(raw.get("gres")),
        )
        for name in names or []
        if name
    ]
