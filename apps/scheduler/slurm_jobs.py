"""Slurm job records → plain job records (docs/integrations.md, 4. Slurm). Pure.

Two families of record, each from Slurm 22.05 (data parser v0.0.38) to 25.x (v0.0.44):

- accounting records — `sacct --json`, slurmrestd `/slurmdb/v0.0.xx/jobs`: `state.current`
  (a string, or a list from v0.0.39), `time.submission/start/end`, `tres.allocated/requested`
  lists, `array.job_id/task_id`, `restart_cnt` and `failed_node` from v0.0.39;
- controller records — `squeue --json`, slurmrestd `/slurm/v0.0.xx/jobs`: `job_state`,
  `submit_time/start_time/end_time`, `tres_alloc_str`/`tres_req_str`, `array_job_id`,
  `array_task_id`, `restart_cnt`.

Numbers may come wrapped as `{set, infinite, number}` (v0.0.40 on). A pending job's start
and a running job's end are Slurm's estimates, not facts: they are dropped here.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from apps.common.errors import BatchError
from apps.common.hostnames import HostlistError, Hostlists, HostlistTooLarge

STATES = {
    "RUNNING": "running",
    "PENDING": "pending",
    "REQUEUED": "pending",
    "REQUEUE_HOLD": "pending",
    "PREEMPTED": "pending",
    "SUSPENDED": "pending",
    "COMPLETED": "completed",
    "CANCELLED": "cancelled",
    "FAILED": "failed",
    "NODE_FAIL": "failed",
    "TIMEOUT": "failed",
    "OUT_OF_MEMORY": "failed",
    "BOOT_FAIL": "failed",
    "DEADLINE": "failed",
    # Not named in docs/integrations.md, 4. Slurm; mapped to what they mean for a training run.
    "COMPLETING": "running",
    "CONFIGURING": "pending",
    "RESIZING": "running",
    "SIGNALING": "running",
    "STAGE_OUT": "running",
    "SPECIAL_EXIT": "failed",
    "REVOKED": "cancelled",
    "REQUEUE_FED": "pending",
    "STOPPED": "pending",
}
# States whose start time is only Slurm's estimate (the attempt has not started).
NOT_STARTED = frozenset({"PENDING", "REQUEUE_HOLD", "REQUEUE_FED"})
# States of an attempt that is over, so its end time is a fact: the job's end states, and
# an attempt ended by a requeue or a preemption.
ATTEMPT_ENDED = frozenset(
    {s for s, status in STATES.items() if status in ("completed", "cancelled", "failed")}
    | {"REQUEUED", "PREEMPTED"}
)
NO_NODES = {"", "None assigned", "(null)"}
MAX_JOBS = 10_000
MAX_GPUS = 1_000_000  # per record: past it the number is not a GPU count
MAX_ID = 2**62
LAST_TIME = 253_402_300_799  # 9999-12-31T23:59:59Z
HOSTLIST_KEPT = 1_000  # characters of an attempt's hostlist expression kept for display


@dataclass(frozen=True)
class SlurmJob:
    """What KUAE Ops keeps of one Slurm job record: one attempt of one job."""

    job_id: str
    name: str
    cluster: str
    status: str
    state: str
    hostnames: list[str] = field(default_factory=list)
    hostlist: str = ""
    gpus: int | None = None
    submitted_at: dt.datetime | None = None
    started_at: dt.datetime | None = None
    ended_at: dt.datetime | None = None
    restart_cnt: int | None = None
    failed_nodes: list[str] = field(default_factory=list)
    array_job_id: int | None = None
    array_task_id: int | None = None

    @property
    def node_fail(self) -> bool:
        """The attempt ended because a node failed: an interruption to record."""
        return self.state == "NODE_FAIL"

    @property
    def key(self) -> int:
        """The attempt's key: its submit time (Slurm sets a new one on every requeue, and
        `squeue` and `sacct` agree on it), else its start, in Unix seconds."""
        at = self.submitted_at or self.started_at
        return int(at.timestamp()) if at else 0


def parse_slurm(payload: Any) -> list[SlurmJob]:
    """Parse `{jobs: [...]}` of any supported shape; BatchError names `jobs[i].field` for
    every problem."""
    if not isinstance(payload, dict) or not isinstance(payload.get("jobs"), list):
        raise BatchError(
            {"jobs": ["expected sacct/squeue --json output: an object with a list 'jobs'"]}
        )
    if len(payload["jobs"]) > MAX_JOBS:
        raise BatchError({"jobs": [f"at most {MAX_JOBS} job records per request"]})
    errors: dict[str, list[str]] = {}
    out = []
    hostlists = Hostlists()  # one bound on names for the whole request (docs/operations.md, Limits)
    for i, raw in enumerate(payload["jobs"]):
        try:
            out.append(_parse_one(raw, hostlists))
        except _FieldError as exc:
            errors[f"jobs[{i}].{exc.field}" if exc.field else f"jobs[{i}]"] = [exc.message]
            if exc.bound:  # past the request's bound: nothing more is expanded
                break
    if errors:
        raise BatchError(errors)
    return out


class _FieldError(Exception):
    def __init__(self, field_name: str, message: str, *, bound: bool = False) -> None:
        super().__init__(message)
        self.field, self.message, self.bound = field_name, message, bound


def _parse_one(raw: Any, hostlists: Hostlists) -> SlurmJob:
    if not isinstance(raw, dict):
        raise _FieldError("", "must be an object")
    job_id = _number(raw.get("job_id"))
    if (
        isinstance(job_id, bool)
        or not isinstance(job_id, int | str)
        or str(job_id) in ("", "0")
        or len(str(job_id)) > 64
    ):
        raise _FieldError("job_id", "required: the Slurm job id")
    controller = "job_state" in raw  # squeue / slurmrestd /slurm/ record
    state_field = "job_state" if controller else "state.current"
    state = _state(raw.get("job_state") if controller else _get(raw, "state", "current"))
    if state is None:
        raise _FieldError(state_field, f"unknown job state {_short(raw, controller)!r}")
    if controller:
        names = {"submit": "submit_time", "start": "start_time", "end": "end_time"}
        values = {k: raw.get(v) for k, v in names.items()}
    else:
        names = {"submit": "time.submission", "start": "time.start", "end": "time.end"}
        values = {k: _get(raw, *v.split(".")) for k, v in names.items()}
    submitted = _time(values["submit"], names["submit"])
    started = None if state in NOT_STARTED else _time(values["start"], names["start"])
    ended = _time(values["end"], names["end"]) if state in ATTEMPT_ENDED else None
    if started and ended and ended < started:
        raise _FieldError(names["end"], f"is before {names['start']}")
    nodes = raw.get("nodes")
    array_job, array_task = _array(raw, controller)
    restart = raw.get("restart_cnt")
    return SlurmJob(
        job_id=str(job_id),
        name=str(raw.get("name") or f"slurm-{job_id}")[:200],
        cluster=str(raw.get("cluster") or "")[:200],
        status=STATES[state],
        state=state,
        hostnames=_hosts(nodes, "nodes", hostlists),
        hostlist=nodes.strip()[:HOSTLIST_KEPT]
        if isinstance(nodes, str) and nodes.strip() not in NO_NODES
        else "",
        gpus=_ctld_gpus(raw) if controller else _db_gpus(raw.get("tres")),
        submitted_at=submitted,
        started_at=started,
        ended_at=ended,
        restart_cnt=None if restart is None else _int(restart, "restart_cnt", 2**31 - 1),
        failed_nodes=[] if controller else _hosts(raw.get("failed_node"), "failed_node", hostlists),
        array_job_id=array_job,
        array_task_id=array_task if array_job else None,
    )


def _get(raw: dict[str, Any], *path: str) -> Any:
    value: Any = raw
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _state(value: Any) -> str | None:
    """The base state: a string, or the first item of a list (v0.0.39 on)."""
    if isinstance(value, list):
        value = value[0] if value else None
    return value if isinstance(value, str) and value in STATES else None


def _short(raw: dict[str, Any], controller: bool) -> object:
    value = raw.get("job_state") if controller else _get(raw, "state", "current")
    return str(value)[:80] if value is not None else None


def _number(value: Any) -> Any:
    """Newer parsers wrap numbers as {set, infinite, number}; unset or infinite is 0."""
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite"):
            return 0
        return value.get("number", 0)
    return value


def _int(value: Any, name: str, top: int = MAX_ID) -> int:
    value = _number(value)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top:
        raise _FieldError(name, f"must be an integer from 0 to {top}")
    return value


def _time(value: Any, name: str) -> dt.datetime | None:
    seconds = _int(value, name, LAST_TIME)
    return dt.datetime.fromtimestamp(seconds, tz=dt.UTC) if seconds else None


def _array(raw: dict[str, Any], controller: bool) -> tuple[int | None, int | None]:
    """(array job id, task id) of an array job's task, else (None, None). A pending array
    record that stands for many tasks has no task id."""
    if controller:
        job, task = raw.get("array_job_id"), raw.get("array_task_id")
        names = ("array_job_id", "array_task_id")
    else:
        job, task = _get(raw, "array", "job_id"), _get(raw, "array", "task_id")
        names = ("array.job_id", "array.task_id")
    job_id = _int(job, names[0])
    if not job_id:
        return None, None
    unset = task is None or (isinstance(task, dict) and not task.get("set", True))
    return job_id, None if unset else _int(task, names[1], 2**31 - 1)


def _hosts(value: Any, name: str, hostlists: Hostlists) -> list[str]:
    """The hostnames of a hostlist expression, each a DNS name, counted against the
    request's bound before any is made."""
    if value is None or (isinstance(value, str) and value.strip() in NO_NODES):
        return []
    if not isinstance(value, str):
        raise _FieldError(name, "must be a hostlist expression such as gpu[1-2,7]")
    try:
        return hostlists.hostnames(value.strip())
    except HostlistTooLarge as exc:
        raise _FieldError(name, str(exc), bound=True) from exc
    except HostlistError as exc:
        raise _FieldError(name, f"bad hostlist {value[:80]!r}: {exc}") from exc


def _gpu_total(entries: list[tuple[str, Any]], name: str) -> int:
    """GPUs among TRES (name, count) pairs: the untyped `gpu` count, else the sum of the
    typed ones (`gpu:h100`); Slurm lists both when it accounts typed GRES."""
    plain = [count for gres, count in entries if gres == "gpu"]
    typed = [count for gres, count in entries if gres.startswith("gpu:")]
    total = sum(_int(c, name, MAX_GPUS) for c in (plain or typed))
    if total > MAX_GPUS:
        raise _FieldError(name, f"names more than {MAX_GPUS:,} GPUs")
    return total


def _db_gpus(tres: Any) -> int | None:
    """GPUs of an accounting record: `gres/gpu` among the allocated TRES, else (a job not
    yet allocated) the requested ones; a record with TRES but no GPU is a 0-GPU job, only a
    record without TRES is None."""
    if not isinstance(tres, dict):
        return None
    for kind in ("allocated", "requested"):
        entries = tres.get(kind)
        if not isinstance(entries, list) or not entries:
            continue
        pairs = [
            (str(e.get("name") or ""), e.get("count"))
            for e in entries
            if isinstance(e, dict) and e.get("type") == "gres"
        ]
        return _gpu_total(pairs, f"tres.{kind}")
    return None


def _ctld_gpus(raw: dict[str, Any]) -> int | None:
    """GPUs of a controller record, from `tres_alloc_str` (`cpu=1,node=1,gres/gpu=4`), else
    `tres_req_str` for a job not yet allocated; None when both are empty."""
    for name in ("tres_alloc_str", "tres_req_str"):
        text = raw.get(name)
        if not isinstance(text, str) or not text.strip():
            continue
        pairs: list[tuple[str, Any]] = []
        for item in text.split(",")[:200]:
            key, _, count = item.strip().partition("=")
            if key.startswith("gres/"):
                pairs.append((key[5:], int(count) if count.isdigit() else -1))
        return _gpu_total(pairs, name)
    return None
