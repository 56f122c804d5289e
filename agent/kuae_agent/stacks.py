"""`kuae-agent stacks --job ID`: the stall reports of a job that runs no Reporter
(docs/agent.md, Ranks, the watchdog and `kuae-agent stacks`).

    kuae-agent stacks --job ID [--server URL] [--token-file F] [--node HOST] [--cluster C]
                      [--pid PID …] [--py-spy PATH] [--print]

On the node, it finds the job's training processes — Python processes whose environment
names the job (KUAE_JOB_ID; else SLURM_JOB_ID, which the agent's job lookup finds in
KUAE_CLUSTER or --cluster, as a Reporter finds its job) and a rank (RANK, else
SLURM_PROCID; where some carry RANK, only those: a torchrun or srun wrapper carries
SLURM_PROCID alone) — or takes the ones `--pid` names. It reads each one's main
thread with `py-spy dump --json` (the process is paused for the moment it is read) and posts
what a Reporter's watchdog would: one registration for the node's ranks (`POST
/api/v1/jobs/{id}/ranks/`, started_at from /proc, so it matches the Reporter's own) and one
stall report per rank (`POST /api/v1/ingest/stalls/`), with the stack, innermost last, and
whether it waits in a collective. A py-spy dump says nothing of when the rank last stepped:
`last_step` and `stalled_s` are sent as null. Each process is named by the node in its
own KUAE_NODE where it has one (what its Reporter would send), else by --node.

py-spy reads another process's memory with ptrace: it needs root, or CAP_SYS_PTRACE in a
container, or `kernel.yama.ptrace_scope` 0 for a process of the same user. Where that is
refused the command says so and which process; the others are still reported.

Exit status: 0 when every process found was read and its report taken; 1 when none was
found, or one could not be read or was not taken; 2 for a usage error (no server, no token).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kuae_agent import config
from kuae_agent.client import Client, Outcome
from kuae_agent.job import JobRef
from kuae_agent.watchdog import (
    MAX_FILE,
    MAX_FRAMES,
    MAX_FUNCTION,
    RANKS_PATH,
    STALLS_PATH,
    Frame,
    in_collective,
    iso_now,
    process_started_at,
)

DUMP_TIMEOUT_S = 30.0
PTRACE_HINT = (
    "ptrace is not allowed: run kuae-agent stacks as root, give its container CAP_SYS_PTRACE, "
    "or set kernel.yama.ptrace_scope to 0 for a process of the same user"
)
_PYTHON = re.compile(r"^python[0-9.]*$|^pypy[0-9.]*$")


class DumpError(Exception):
    """py-spy could not read a process; the message says why in plain words."""


@dataclass(frozen=True)
class TrainingProcess:
    """One rank's process on this node, as its environment describes it."""

    pid: int
    rank: int
    world_size: int
    local_rank: int | None
    node: str  # its own KUAE_NODE, else the agent's node
    has_rank_var: bool  # RANK is set (not only SLURM_PROCID)


def environ(pid: int, proc: Path = Path("/proc")) -> dict[str, str]:
    """Process `pid`'s environment (raises OSError where it cannot be read)."""
    raw = (proc / str(pid) / "environ").read_bytes()
    out: dict[str, str] = {}
    for item in raw.split(b"\0"):
        name, sep, value = item.partition(b"=")
        if sep:
            out[name.decode(errors="replace")] = value.decode(errors="replace")
    return out


def is_python(pid: int, proc: Path = Path("/proc")) -> bool:
    """Whether process `pid` runs a Python interpreter (its executable's or argv[0]'s name)."""
    names: list[str] = []
    with contextlib.suppress(OSError):
        names.append(Path(os.readlink(proc / str(pid) / "exe")).name)
    try:
        argv0 = (proc / str(pid) / "cmdline").read_bytes().split(b"\0", 1)[0]
        names.append(Path(argv0.decode(errors="replace")).name)
    except OSError:
        pass
    return any(_PYTHON.match(name) for name in names)


def describe(pid: int, env: Mapping[str, str], node: str) -> TrainingProcess | None:
    """The rank `env` gives process `pid`, or None when it names no rank."""
    rank = config.integer(env, "RANK", "SLURM_PROCID")
    if rank is None or rank < 0:
        return None
    world = config.integer(env, "WORLD_SIZE", "SLURM_NTASKS") or 1
    return TrainingProcess(
        pid=pid,
        rank=rank,
        world_size=max(world, rank + 1),
        local_rank=config.integer(env, "LOCAL_RANK", "SLURM_LOCALID"),
        node=env.get("KUAE_NODE", "").strip() or node,
        has_rank_var=config.integer(env, "RANK") is not None,
    )


Resolve = Callable[[str, str], "int | None"]  # (Slurm job id, cluster) -> the KUAE job id


def belongs(env: Mapping[str, str], job_id: int, resolve: Resolve, cluster: str = "") -> bool:
    """Whether an environment names the job: KUAE_JOB_ID, or a Slurm job id (SLURM_JOB_ID,
    in KUAE_CLUSTER or else `cluster`) that `resolve` finds to be it."""
    own = env.get("KUAE_JOB_ID", "").strip()
    if own:
        return own == str(job_id)
    slurm = env.get("SLURM_JOB_ID", "").strip()
    where = env.get("KUAE_CLUSTER", "").strip() or cluster
    return bool(slurm and where) and resolve(slurm, where) == job_id


def resolver(client: Client | None) -> Resolve:
    """Finds a job by its Slurm id as the Reporter does (the agent's job lookup), each
    (Slurm id, cluster) asked once; without a client, none is found."""
    known: dict[tuple[str, str], int | None] = {}

    def resolve(slurm: str, cluster: str) -> int | None:
        if client is None:
            return None
        if (slurm, cluster) not in known:
            found, reason = JobRef(None, slurm, cluster).resolve(client)
            if found is None:
                print(
                    f"kuae-agent stacks: Slurm job {slurm} in {cluster}: {reason[:200]}",
                    file=sys.stderr,
                )
            known[slurm, cluster] = found
        return known[slurm, cluster]

    return resolve


def find_processes(
    job_id: int,
    node: str,
    *,
    resolve: Resolve,
    cluster: str = "",
    pids: Sequence[int] = (),
    proc: Path = Path("/proc"),
) -> tuple[list[TrainingProcess], list[str]]:
    """The job's training processes on this node (or the `pids` named, whatever their
    environment says of the job), rank order, and a note for each process passed over
    because its environment could not be read."""
    notes: list[str] = []
    found: list[TrainingProcess] = []
    named = list(pids)
    candidates = named or [int(p.name) for p in proc.iterdir() if p.name.isdigit()]
    me = os.getpid()
    for pid in candidates:
        if pid == me:
            continue
        try:
            env = environ(pid, proc)
        except OSError as exc:
            if named:
                notes.append(f"pid {pid}: its environment cannot be read ({exc.strerror or exc})")
            continue
        if not named and not (is_python(pid, proc) and belongs(env, job_id, resolve, cluster)):
            continue
        described = describe(pid, env, node)
        if described is None:
            if named:
                notes.append(f"pid {pid}: no RANK or SLURM_PROCID in its environment")
            continue
        found.append(described)
    if not named and any(p.has_rank_var for p in found):
        found = [p for p in found if p.has_rank_var]  # the wrappers carry SLURM_PROCID alone
    found.sort(key=lambda p: (p.rank, p.pid))
    return found, notes


def py_spy_path(given: str | None = None) -> str | None:
    """The py-spy to run: `given`, else the one beside this Python, else the one on PATH."""
    if given:
        return given
    beside = Path(sys.executable).with_name("py-spy")
    if beside.exists():
        return str(beside)
    return shutil.which("py-spy")


def training_thread(threads: Sequence[Mapping[str, Any]]) -> list[Frame]:
    """From `py-spy dump --json` (threads, each with its frames innermost FIRST): the
    training thread's stack, innermost LAST — the main thread's, else the first with frames
    (at most MAX_FRAMES, the innermost)."""
    chosen: Mapping[str, Any] | None = None
    for thread in threads:
        if thread.get("frames") and thread.get("thread_name") == "MainThread":
            chosen = thread
            break
    if chosen is None:
        chosen = next((t for t in threads if t.get("frames")), None)
    if chosen is None:
        return []
    frames: list[Frame] = [
        {
            "file": str(f.get("filename") or "")[:MAX_FILE],
            "function": str(f.get("name") or "")[:MAX_FUNCTION],
            "line": max(0, int(f.get("line") or 0)),
        }
        for f in list(chosen["frames"])[:MAX_FRAMES]
    ]
    frames.reverse()
    return frames


def dump(pid: int, py_spy: str, timeout_s: float = DUMP_TIMEOUT_S) -> list[Frame]:
    """Process `pid`'s training-thread stack by `py-spy dump --json`; DumpError says why not."""
    try:
        done = subprocess.run(
            [py_spy, "dump", "--pid", str(pid), "--json"],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise DumpError(f"py-spy gave no answer within {timeout_s:g} s") from exc
    except OSError as exc:
        raise DumpError(f"py-spy could not be run ({exc})") from exc
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip()
        # py-spy says "Permission Denied: Try running again with elevated permissions…"
        # (0.4.3), or passes on the OS's "Permission denied (os error 13)".
        if "permission denied" in said.lower() or "operation not permitted" in said.lower():
            raise DumpError(PTRACE_HINT)
        first = next((line for line in said.splitlines() if line.strip()), "no message")
        raise DumpError(f"py-spy failed: {first[:300]}")
    try:
        threads = json.loads(done.stdout)
    except ValueError as exc:
        raise DumpError(f"py-spy's answer is not JSON ({exc})") from exc
    if not isinstance(threads, list):
        raise DumpError("py-spy's answer is not a list of threads")
    return training_thread([t for t in threads if isinstance(t, dict)])


def build(
    job_id: int,
    processes: Sequence[TrainingProcess],
    stacks: Mapping[int, list[Frame]],
    *,
    started_at: Callable[[int], str] = process_started_at,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The registration and the batch of stall reports for the processes read (`stacks`,
    by pid)."""
    ranks: list[dict[str, Any]] = []
    reports: list[dict[str, Any]] = []
    ts = iso_now()
    for p in processes:
        if p.pid not in stacks:
            continue
        entry: dict[str, Any] = {
            "rank": p.rank,
            "world_size": p.world_size,
            "node": p.node,
            "pid": p.pid,
            "started_at": started_at(p.pid),
        }
        if p.local_rank is not None:
            entry["local_rank"] = p.local_rank
        ranks.append(entry)
        stack = stacks[p.pid]
        reports.append(
            {
                "job": job_id,
                "node": p.node,
                "ts": ts,
                "rank": p.rank,
                "world_size": p.world_size,
                "last_step": None,
                "stalled_s": None,
                "stack": stack,
                "in_collective": in_collective(stack) if stack else False,
                "resumed": False,
            }
        )
    return {"ranks": ranks}, {"reports": reports}


def where(stack: Sequence[Frame]) -> str:
    """A stack in a few words: its innermost frame and whether that is a collective."""
    if not stack:
        return "no Python frame"
    inner = stack[-1]
    place = f"{inner['function']} ({Path(str(inner['file'])).name}:{inner['line']})"
    return f"in a collective, {place}" if in_collective(stack) else place


def parser() -> argparse.ArgumentParser:
    """The command line of `kuae-agent stacks`."""
    p = argparse.ArgumentParser(
        prog="kuae-agent stacks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--job", type=int, required=True, help="the KUAE job's id")
    p.add_argument("--server", default=None, help="KUAE Ops base URL (default KUAE_SERVER)")
    p.add_argument("--token-file", type=Path, help="file holding the agent's API token")
    p.add_argument("--node", default=None, help="this node's registered hostname")
    p.add_argument(
        "--cluster",
        default=None,
        help="the cluster, to find a job by its Slurm id (default KUAE_CLUSTER)",
    )
    p.add_argument(
        "--pid", type=int, action="append", default=[], help="a training process (repeatable)"
    )
    p.add_argument("--py-spy", default=None, help="the py-spy to run (default: found)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds for each request")
    p.add_argument("--print", action="store_true", help="print the stacks as JSON and send nothing")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of `kuae-agent stacks`; returns the exit code."""
    args = parser().parse_args(argv)
    node = args.node or config.node()
    server = (args.server or config.server()).rstrip("/")
    try:
        token = config.token(token_file=args.token_file)
    except OSError as exc:
        print(f"kuae-agent stacks: cannot read the token: {exc}", file=sys.stderr)
        return 2
    if not args.print and (not server or not token):
        print(
            "kuae-agent stacks: no server or token (KUAE_SERVER, KUAE_TOKEN or KUAE_TOKEN_FILE)",
            file=sys.stderr,
        )
        return 2
    py_spy = py_spy_path(args.py_spy)
    if py_spy is None:
        print(
            "kuae-agent stacks: py-spy is not installed (pip install 'kuae-agent[stacks]')",
            file=sys.stderr,
        )
        return 2
    client = Client(server or "http://unused", token, timeout_s=args.timeout)
    try:
        return _stacks(args, client, node, py_spy, connected=bool(server and token))
    finally:
        client.close()


def _stacks(
    args: argparse.Namespace, client: Client, node: str, py_spy: str, *, connected: bool
) -> int:
    # `--print` without a server finds the job by KUAE_JOB_ID alone.
    resolve = resolver(client if connected else None)
    cluster = args.cluster or os.environ.get("KUAE_CLUSTER", "")
    processes, notes = find_processes(
        args.job, node, resolve=resolve, cluster=cluster, pids=args.pid
    )
    for note in notes:
        print(f"kuae-agent stacks: {note}", file=sys.stderr)
    if not processes:
        print(f"kuae-agent stacks: no training process of job {args.job} here", file=sys.stderr)
        return 1
    stacks: dict[int, list[Frame]] = {}
    failed = bool(notes)
    for p in processes:
        try:
            stacks[p.pid] = dump(p.pid, py_spy)
        except DumpError as exc:
            failed = True
            print(f"kuae-agent stacks: rank {p.rank} (pid {p.pid}): {exc}", file=sys.stderr)
            continue
        print(f"rank {p.rank} on {p.node} (pid {p.pid}): {where(stacks[p.pid])}")
    registration, batch = build(args.job, processes, stacks)
    if args.print:
        print(json.dumps({"registration": registration, **batch}, indent=2))
        return 1 if failed else 0
    if not batch["reports"]:
        return 1
    for path, body, what in (
        (RANKS_PATH.format(job=args.job), registration, "the registration"),
        (STALLS_PATH, batch, "the stall reports"),
    ):
        outcome, answer = client.request_json("POST", path, body=body)
        if outcome is not Outcome.STORED:
            print(f"kuae-agent stacks: {what} not taken: {str(answer)[:500]}", file=sys.stderr)
            return 1
    print(f"kuae-agent stacks: {len(batch['reports'])} stall report(s) sent for job {args.job}")
    return 1 if failed else 0
