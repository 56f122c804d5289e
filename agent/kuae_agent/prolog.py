"""`kuae-agent prolog`: Slurm's `Prolog=` hook (docs/agent.md). Asks KUAE whether the node it
runs on may take a job — `GET nodes/{hostname}/admission/` — and exits 1 when the node is not
`healthy` or has a current fail result (Slurm then drains the node and requeues the job).
It answers within `--deadline` (5 s) whatever the network does; when KUAE does not answer
in time, answers 5xx, or cannot judge the node (unknown node, refused token) it exits 0
and says why on stderr: fail-open, so KUAE being down never stops a cluster.

    kuae-agent prolog [--server URL] [--token-file FILE] [--node HOST] [--deadline 5]

Server and token come from KUAE_SERVER and KUAE_TOKEN / KUAE_TOKEN_FILE too (Slurm runs the
prolog with slurmd's environment: set them in the prolog script or slurmd's unit); the node
is --node, KUAE_NODE, SLURMD_NODENAME (set by Slurm in the prolog) or the host name.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from kuae_agent import config

ADMIT, REFUSE, USAGE = 0, 1, 2


def node_name(explicit: str | None = None) -> str:
    """--node, else KUAE_NODE, else SLURMD_NODENAME, else the host name."""
    env = os.environ
    return (
        explicit
        or env.get("KUAE_NODE", "").strip()
        or env.get("SLURMD_NODENAME", "").strip()
        or config.node({})
    )


def ask(server: str, token: str, node: str, timeout_s: float) -> tuple[int | None, Any]:
    """One `GET nodes/{node}/admission/`: (HTTP status, JSON answer or error text); status
    None when it could not be asked."""
    try:
        response = httpx.get(
            f"{server}/api/v1/nodes/{quote(node, safe='')}/admission/",
            headers={"Authorization": f"Token {token}"},
            timeout=httpx.Timeout(timeout_s),
        )
    except httpx.HTTPError as exc:
        return None, f"{type(exc).__name__}: {exc}"
    try:
        return response.status_code, response.json()
    except ValueError:
        return response.status_code, response.text[:300]


def decide(status: int | None, answer: Any, node: str) -> tuple[int, str]:
    """The exit code and the line for stderr, from KUAE's answer."""
    if status == 200 and isinstance(answer, dict) and "ok" in answer:
        if answer["ok"]:
            return ADMIT, f"kuae-agent prolog: {node} admitted (state {answer.get('state')})"
        reasons = "; ".join(
            str(p.get("reason", p)) if isinstance(p, dict) else str(p)
            for p in answer.get("problems") or []
        )
        return REFUSE, f"kuae-agent prolog: {node} refused by KUAE: {reasons or 'not healthy'}"
    if status is None:
        why = f"KUAE did not answer ({answer})"
    else:
        why = f"KUAE answered HTTP {status} ({str(answer)[:200]})"
    return ADMIT, f"kuae-agent prolog: {node} admitted without a check (fail-open): {why}"


def main(argv: list[str] | None = None) -> int:
    """Entry point of `kuae-agent prolog`; returns the exit code."""
    started = time.monotonic()
    p = argparse.ArgumentParser(
        prog="kuae-agent prolog",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--server", default=None, help="KUAE Ops base URL (default KUAE_SERVER)")
    p.add_argument("--token-file", type=Path, help="file holding the agent's API token")
    p.add_argument("--node", help="the node to check (default: this one)")
    p.add_argument("--deadline", type=float, default=5.0, help="seconds, in all (default 5)")
    args = p.parse_args(argv)
    node = node_name(args.node)
    server = (args.server or config.server()).rstrip("/")
    try:
        token = config.token(token_file=args.token_file)
    except OSError as exc:
        token, server = "", server or ""
        print(f"kuae-agent prolog: cannot read the token ({exc})", file=sys.stderr)
    if not server or not token:
        print(
            f"kuae-agent prolog: {node} admitted without a check (fail-open): "
            "no server or token (KUAE_SERVER, KUAE_TOKEN or KUAE_TOKEN_FILE)",
            file=sys.stderr,
        )
        return ADMIT
    budget = max(0.1, args.deadline - (time.monotonic() - started) - 0.2)
    result: list[tuple[int | None, Any]] = []
    worker = threading.Thread(
        target=lambda: result.append(ask(server, token, node, budget * 0.9)), daemon=True
    )
    worker.start()
    worker.join(budget)  # a name lookup or a slow body cannot hold the prolog past it
    status, answer = result[0] if result else (None, f"no answer within {args.deadline:g} s")
    code, line = decide(status, answer, node)
    print(line, file=sys.stderr)
    return code
