"""`kuae-agent launch -- CMD`: run a training command as a KUAE job (docs/agent.md).

    kuae-agent launch [--name NAME] [--cluster C] [--external-id ID] [--nodes HOSTLIST]
                      [--gpu-count N] [--model-name M] [--n-params N] [--job-id ID] [--force]
                      -- torchrun … train.py …

1. Finds the job — the newest of the cluster with this `external_id` (default
   SLURM_JOB_ID), marked `running` again — or registers it (`POST jobs/`, status `running`);
   `--job-id`/KUAE_JOB_ID names a job outright.
2. Runs preflight (`POST jobs/{id}/preflight/`) and refuses to start (exit 3, the problems
   on stderr, the job marked `cancelled`) when a node fails it, unless `--force`.
3. Runs CMD with KUAE_JOB_ID set (so a Reporter inside needs no lookup), passing SIGINT and
   SIGTERM on to it, and marks the job `completed` (exit 0) or `failed` from its exit
   code (`PATCH jobs/{id}/`, with `ended_at`). Exits with CMD's code.

KUAE being unreachable never stops a run: registration or preflight that cannot be done
is logged and CMD runs anyway. Under Slurm, one launcher per node: every launcher finds the
same job; only rank 0 (SLURM_PROCID, RANK) marks it completed, any may mark it failed.
Defaults: name SLURM_JOB_NAME, cluster KUAE_CLUSTER, nodes SLURM_JOB_NODELIST (else this
node), GPUs SLURM_GPUS_ON_NODE × nodes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from types import FrameType
from typing import Any

from kuae_agent import config
from kuae_agent.client import Client, Outcome

log = logging.getLogger("kuae_agent.launch")

REFUSED = 3  # preflight failed and no --force
MAX_HOSTS = 20_000  # the hostlist bound of docs/operations.md, Limits
_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def expand_hostlist(expr: str, limit: int = MAX_HOSTS) -> list[str]:
    """Slurm's hostlist (`gpu[01-03,7],login1`) → names, in order; ValueError past `limit`
    names or on a malformed expression."""
    out: list[str] = []
    for part in _split_top(expr):
        names = [""]
        rest = part
        while rest:
            open_at = rest.find("[")
            if open_at < 0:
                names = [n + rest for n in names]
                break
            close_at = rest.find("]", open_at)
            if close_at < 0:
                raise ValueError(f"unclosed [ in {part!r}")
            prefix, body, rest = rest[:open_at], rest[open_at + 1 : close_at], rest[close_at + 1 :]
            values: list[str] = []
            for item in body.split(","):
                m = _RANGE.match(item.strip())
                if not m:
                    raise ValueError(f"bad range {item!r} in {part!r}")
                lo, hi = m.group(1), m.group(2) or m.group(1)
                if int(hi) - int(lo) + 1 > limit:
                    raise ValueError(f"more than {limit} names")
                values += [str(i).zfill(len(lo)) for i in range(int(lo), int(hi) + 1)]
            if len(names) * len(values) + len(out) > limit:
                raise ValueError(f"more than {limit} names")
            names = [n + prefix + v for n in names for v in values]
        out += [n for n in names if n]
        if len(out) > limit:
            raise ValueError(f"more than {limit} names")
    return out


def _split_top(expr: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(expr):
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(expr[start:i])
            start = i + 1
    parts.append(expr[start:])
    return [p.strip() for p in parts if p.strip()]


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z")


def parser() -> argparse.ArgumentParser:
    """The command line of `kuae-agent launch`."""
    p = argparse.ArgumentParser(
        prog="kuae-agent launch",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--server", default=None, help="KUAE Ops base URL (default KUAE_SERVER)")
    p.add_argument("--token-file", type=Path, help="file holding the API token")
    p.add_argument("--job-id", type=int, help="an existing job (default KUAE_JOB_ID)")
    p.add_argument("--name", help="job name (default SLURM_JOB_NAME, else CMD)")
    p.add_argument("--cluster", help="cluster name (default KUAE_CLUSTER)")
    p.add_argument("--external-id", help="scheduler id (default SLURM_JOB_ID)")
    p.add_argument("--nodes", help="hostlist (default SLURM_JOB_NODELIST, else this node)")
    p.add_argument("--gpu-count", type=int, help="GPUs in all (default SLURM_GPUS_ON_NODE × nodes)")
    p.add_argument("--model-name")
    p.add_argument("--n-params", type=float)
    p.add_argument("--flops-per-token", type=float)
    p.add_argument("--force", action="store_true", help="start even if preflight fails")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per request to KUAE")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD [ARGS …]")
    return p


def _register(args: argparse.Namespace, client: Client, env: dict[str, str]) -> int | None:
    """The job's id: named, or registered/found with `POST jobs/`; None if KUAE can't say."""
    job_id = args.job_id if args.job_id is not None else config.integer(env, "KUAE_JOB_ID")
    if job_id is not None:
        outcome, answer = client.request_json(
            "PATCH", f"/api/v1/jobs/{job_id}/", body={"status": "running"}
        )
        if outcome is not Outcome.STORED:
            log.warning("kuae-agent launch: could not mark job %s running: %s", job_id, answer)
        return job_id
    cluster = args.cluster or env.get("KUAE_CLUSTER", "")
    if not cluster:
        log.warning("kuae-agent launch: no --cluster or KUAE_CLUSTER: job not registered")
        return None
    try:
        nodes = expand_hostlist(args.nodes or env.get("SLURM_JOB_NODELIST", ""))
    except ValueError as exc:
        log.warning("kuae-agent launch: bad node list (%s): job not registered", exc)
        return None
    nodes = nodes or [config.node(env)]
    gpus = args.gpu_count
    if gpus is None:
        per_node = config.integer(env, "SLURM_GPUS_ON_NODE")
        gpus = per_node * len(nodes) if per_node is not None else 0
    body: dict[str, Any] = {
        "name": args.name or env.get("SLURM_JOB_NAME") or " ".join(args.command)[:200],
        "cluster": cluster,
        "gpu_count": gpus,
        "nodes": nodes,
        "status": "running",
        "started_at": _now(),
    }
    external_id = args.external_id or env.get("SLURM_JOB_ID", "")
    if external_id:
        body["external_id"] = external_id
        found = _find(client, cluster, external_id)
        if found is not None:  # a requeued or restarted run: the same job, running again
            client.request_json(
                "PATCH", f"/api/v1/jobs/{found}/", body={"status": "running", "ended_at": None}
            )
            return found
    for key in ("model_name", "n_params", "flops_per_token"):
        if getattr(args, key) is not None:
            body[key] = getattr(args, key)
    outcome, answer = client.request_json("POST", "/api/v1/jobs/", body=body)
    if outcome is Outcome.STORED and isinstance(answer, dict) and "id" in answer:
        return int(answer["id"])
    log.warning("kuae-agent launch: job not registered: %s", answer)
    return None


def _find(client: Client, cluster: str, external_id: str) -> int | None:
    """The newest job of `cluster` with this `external_id`, if KUAE has one."""
    outcome, answer = client.request_json(
        "GET", "/api/v1/jobs/", params={"external_id": external_id, "cluster": cluster}
    )
    results = answer.get("results") if isinstance(answer, dict) else None
    if outcome is Outcome.STORED and results:
        return int(results[0]["id"])
    return None


def _preflight(client: Client, job_id: int) -> tuple[bool, list[str]]:
    """(ok, problems); ok when KUAE cannot be asked (fail-open, logged)."""
    outcome, answer = client.request_json("POST", f"/api/v1/jobs/{job_id}/preflight/")
    if outcome is not Outcome.STORED or not isinstance(answer, dict):
        log.warning("kuae-agent launch: preflight not run (%s): starting anyway", answer)
        return True, []
    problems = [
        (f"{p.get('node')}: {p['reason']}" if p.get("reason") else f"{p.get('node')}: not ready")
        if isinstance(p, dict)
        else str(p)
        for p in answer.get("problems") or []
    ]
    return bool(answer.get("ok")), problems


def _run(command: list[str], env: dict[str, str]) -> int:
    """Run CMD, passing SIGINT/SIGTERM on; its exit code (128 + N when signal N ended it)."""
    child = subprocess.Popen(command, env=env)  # noqa: S603 — the operator's own command

    def forward(signum: int, _frame: FrameType | None) -> None:
        child.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        code = child.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    return 128 - code if code < 0 else code


def main(argv: list[str] | None = None) -> int:
    """Entry point of `kuae-agent launch`; returns CMD's exit code (or 2, 3)."""
    args = parser().parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    args.command = command
    if not command:
        print("kuae-agent launch: no command (kuae-agent launch -- CMD …)", file=sys.stderr)
        return 2
    env = dict(os.environ)
    server = (args.server or config.server(env)).rstrip("/")
    try:
        token = config.token(env, args.token_file)
    except OSError as exc:
        print(f"kuae-agent launch: cannot read the token ({exc})", file=sys.stderr)
        token = ""
    client = Client(server, token, timeout_s=args.timeout) if server and token else None
    if client is None:
        log.warning("kuae-agent launch: no KUAE_SERVER or token: running without KUAE")
    job_id = _register(args, client, env) if client is not None else None
    try:
        if client is not None and job_id is not None:
            ok, problems = _preflight(client, job_id)
            if not ok:
                for line in problems:
                    print(f"kuae-agent launch: preflight: {line}", file=sys.stderr)
                if not args.force:
                    print(
                        f"kuae-agent launch: job {job_id} refused by preflight "
                        "(--force starts it anyway)",
                        file=sys.stderr,
                    )
                    client.request_json(
                        "PATCH",
                        f"/api/v1/jobs/{job_id}/",
                        body={"status": "cancelled", "ended_at": _now()},
                    )
                    return REFUSED
                log.warning("kuae-agent launch: preflight failed; --force: starting anyway")
            env["KUAE_JOB_ID"] = str(job_id)
        code = _run(command, env)
        rank = config.integer(env, "SLURM_PROCID", "RANK") or 0
        if client is not None and job_id is not None and (code != 0 or rank == 0):
            status = "completed" if code == 0 else "failed"
            outcome, answer = client.request_json(
                "PATCH", f"/api/v1/jobs/{job_id}/", body={"status": status, "ended_at": _now()}
            )
            if outcome is not Outcome.STORED:
                log.warning(
                    "kuae-agent launch: could not mark job %s %s: %s", job_id, status, answer
                )
        return code
    finally:
        if client is not None:
            client.close()
