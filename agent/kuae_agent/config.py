"""Where the agent's commands and the Reporter find their settings: arguments first, then the
environment (docs/agent.md, The environment: KUAE_SERVER, KUAE_TOKEN or KUAE_TOKEN_FILE,
KUAE_NODE …)."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from pathlib import Path


def server(env: Mapping[str, str] | None = None) -> str:
    """KUAE_SERVER (the base URL, e.g. https://ops.example), or ''."""
    env = os.environ if env is None else env
    return env.get("KUAE_SERVER", "").strip().rstrip("/")


def token(env: Mapping[str, str] | None = None, token_file: Path | None = None) -> str:
    """The API token: `token_file`, else KUAE_TOKEN, else the file KUAE_TOKEN_FILE names;
    '' when none is set (a file that cannot be read raises OSError)."""
    env = os.environ if env is None else env
    if token_file is not None:
        return token_file.read_text().strip()
    if env.get("KUAE_TOKEN", "").strip():
        return env["KUAE_TOKEN"].strip()
    if env.get("KUAE_TOKEN_FILE"):
        return Path(env["KUAE_TOKEN_FILE"]).read_text().strip()
    return ""


def node(env: Mapping[str, str] | None = None) -> str:
    """This node's registered hostname: KUAE_NODE, else the host name."""
    env = os.environ if env is None else env
    return env.get("KUAE_NODE", "").strip() or socket.gethostname()


def mounts(env: Mapping[str, str] | None = None) -> list[str]:
    """The cluster's required mounts from KUAE_MOUNTS (`/checkpoints,/scratch`), or none
    (docs/agent.md, Host readings)."""
    env = os.environ if env is None else env
    return [m.strip() for m in env.get("KUAE_MOUNTS", "").split(",") if m.strip()]


def integer(env: Mapping[str, str], *names: str) -> int | None:
    """The first of `names` set in `env` to a whole number (e.g. RANK, then SLURM_PROCID)."""
    for name in names:
        value = env.get(name, "").strip()
        if value:
            try:
                return int(value)
            except ValueError:
                continue
    return None
