"""The `cli` connection: Slurm's client commands on the worker host (`SLURM_CONF` and munge
there), as an operator would type them."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
from typing import Any

from apps.scheduler.connection import SchedulerRefused, SchedulerUnavailable

# What the commands print when the daemons are away, as opposed to refusing a request.
UNREACHABLE = (
    "unable to contact slurm controller",
    "socket timed out",
    "connection refused",
    "zero bytes were transmitted",
    "problem talking to the database",
    "slurmdbd",
    "communication connection failure",
    "munge",
)
MAX_OUTPUT = 256 * 1024 * 1024  # a 10,000-node listing is a few tens of MiB


class SlurmCli:
    """`squeue`, `sacct`, `sinfo` with `--json`, and `scontrol update`."""

    def __init__(self, *, conf: str = "", timeout_s: float = 20.0) -> None:
        self.conf, self.timeout_s = conf, timeout_s

    def describe(self) -> str:
        """`slurm cli (<slurm.conf>)`."""
        return f"slurm cli ({self.conf or 'SLURM_CONF of the worker'})"

    def _run(self, *args: str) -> str:
        return self._exec(*args)[0]

    def _exec(self, *args: str) -> tuple[str, str]:
        env = dict(os.environ)
        if self.conf:
            env["SLURM_CONF"] = self.conf
        try:
            done = subprocess.run(  # noqa: S603 — fixed program names, no shell
                args,
                env=env,
                capture_output=True,
                text=True,
                timeout=self.timeout_s,
                check=False,
            )
        except FileNotFoundError as exc:
            raise SchedulerUnavailable(f"{args[0]} is not installed on this worker") from exc
        except subprocess.TimeoutExpired as exc:
            raise SchedulerUnavailable(f"{args[0]} gave no answer in {self.timeout_s:g} s") from exc
        if len(done.stdout) > MAX_OUTPUT:
            raise SchedulerRefused(f"{args[0]} printed more than {MAX_OUTPUT >> 20} MiB")
        if done.returncode != 0:
            message = " ".join((done.stderr or done.stdout).split())[:300]
            text = f"{' '.join(args[:2])}: {message or f'exit status {done.returncode}'}"
            if any(marker in message.lower() for marker in UNREACHABLE):
                raise SchedulerUnavailable(text)
            raise SchedulerRefused(text)
        return done.stdout, done.stderr or ""

    def _json(self, *args: str) -> Any:
        out, err = self._exec(*args)
        try:
            doc = json.loads(out)
        except ValueError as exc:
            raise SchedulerRefused(f"{args[0]} --json printed no JSON: {out[:120]!r}") from exc
        # With slurmctld away, 22.05's --json commands exit 0 with an error in the document
        # and an empty list: that is a failed read, not an empty cluster.
        errors = doc.get("errors") if isinstance(doc, dict) else None
        problems = [
            str(e.get("description") or e.get("error") or e)
            for e in errors or []
            if not (isinstance(e, dict) and e.get("error_number") == 9003)  # nothing found
        ]
        if problems:
            message = " ".join(err.split())[:300] or "; ".join(problems)[:300]
            if not err:  # 22.05 says only "Unspecified error": ask the controller's state
                message += f" ({self._ping()})"
            text = f"{args[0]} --json: {message}"
            if any(marker in message.lower() for marker in UNREACHABLE) or not err:
                raise SchedulerUnavailable(text)
            raise SchedulerRefused(text)
        return doc

    def _ping(self) -> str:
        try:
            out, err = self._exec("scontrol", "ping")
        except (SchedulerUnavailable, SchedulerRefused) as exc:
            return str(exc)
        first = (out or err).strip().splitlines()[:1]  # not the banner of asterisks after it
        return "scontrol ping: " + " ".join(first[0].split())[:200] if first else "scontrol ping: —"

    def jobs_active(self) -> Any:
        """`squeue --json`: running and pending jobs."""
        return self._json("squeue", "--json")

    def jobs_since(self, since: dt.datetime) -> Any:
        """`sacct --json -X -D -S now-N`: allocations that ran since then, every attempt of a
        requeued job (`-D`). A relative start needs no time zone agreement with the host."""
        seconds = max(1, int((dt.datetime.now(dt.UTC) - since).total_seconds()))
        return self._json("sacct", "--json", "-X", "-D", "-a", "-S", f"now-{seconds}", "-E", "now")

    def nodes(self) -> Any:
        """`sinfo -N --json`: one record per node (22.05 ignores `-N` in JSON)."""
        return self._json("sinfo", "-N", "--json")

    def drain(self, node: str, reason: str) -> None:
        """`scontrol update NodeName=H State=DRAIN Reason=…`."""
        self._run("scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}")

    def resume(self, node: str) -> None:
        """`scontrol update NodeName=H State=RESUME`."""
        self._run("scontrol", "update", f"NodeName={node}", "State=RESUME")
