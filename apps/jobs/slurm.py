"""`sacct --json` / slurmrestd `slurmdb` job records → plain job records (CONTRACT §2). Pure."""

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
    # Not named by the contract; mapped to what they mean for a training run.
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
NO_NODES = {"", "None assigned", "(null)"}
MAX_JOBS = 10_000


@dataclass(frozen=True)
class SlurmJob:
    """What KUAE Ops keeps of one Slurm job record."""

    job_id: str
    name: str
    cluster: str
    status: str
    state: str
    hostnames: list[str] = field(default_factory=list)
    gpus: int | None = None
    started_at: dt.datetime | None = None
    ended_at: dt.datetime | None = None
    restart_cnt: int = 0
    failed_nodes: list[str] = field(default_factory=list)

    @property
    def node_fail(self) -> bool:
        """The job ended because a node failed: an interruption to record."""
        return self.state == "NODE_FAIL"


def parse_slurm(payload: Any) -> list[SlurmJob]:
    """Parse `{jobs: [...]}`; BatchError names `jobs[i].field` for every problem."""
    if not isinstance(payload, dict) or not isinstance(payload.get("jobs"), list):
        raise BatchError({"jobs": ["expected sacct --json output: an object with a list 'jobs'"]})
    if len(payload["jobs"]) > MAX_JOBS:
        raise BatchError({"jobs": [f"at most {MAX_JOBS} job records per request"]})
    errors: dict[str, list[str]] = {}
    out = []
    hostlists = Hostlists()  # one bound on names for the whole request (CONTRACT §1)
    for i, raw in enumerate(payload["jobs"]):
        try:
            out.append(_parse_one(raw, hostlists))
        except _FieldError as exc:
            errors[f"jobs[{i}].{exc.field}"] = [exc.message]
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
    job_id = raw.get("job_id")
    if isinstance(job_id, bool) or not isinstance(job_id, int | str) or str(job_id) in ("", "0"):
        raise _FieldError("job_id", "required: the Slurm job id")
    state_list = (
        (raw.get("state") or {}).get("current") if isinstance(raw.get("state"), dict) else None
    )
    if isinstance(state_list, str):
        state_list = [state_list]
    if not state_list or not isinstance(state_list[0], str) or state_list[0] not in STATES:
        raise _FieldError("state.current", f"unknown job state {state_list!r}")
    state = state_list[0]
    times = raw.get("time") if isinstance(raw.get("time"), dict) else {}
    return SlurmJob(
        job_id=str(job_id),
        name=str(raw.get("name") or f"slurm-{job_id}")[:200],
        cluster=str(raw.get("cluster") or ""),
        status=STATES[state],
        state=state,
        hostnames=_hosts(raw.get("nodes"), "nodes", hostlists),
        gpus=_gpus(raw.get("tres")),
        started_at=_time(times.get("start"), "time.start"),
        ended_at=_time(times.get("end"), "time.end"),
        restart_cnt=_int(raw.get("restart_cnt", 0), "restart_cnt"),
        failed_nodes=_hosts(raw.get("failed_node"), "failed_node", hostlists),
    )


def _number(value: Any) -> Any:
    """Newer parsers wrap numbers as {set, infinite, number}."""
    if isinstance(value, dict):
        return value.get("number", 0) if value.get("set", True) else 0
    return value


def _int(value: Any, name: str) -> int:
    value = _number(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _FieldError(name, "must be a non-negative integer")
    return value


def _time(value: Any, name: str) -> dt.datetime | None:
    seconds = _int(value if value is not None else 0, name)
    return dt.datetime.fromtimestamp(seconds, tz=dt.UTC) if seconds else None


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


def _gpus(tres: Any) -> int | None:
    """GPUs from the `gres/gpu` TRES (allocated, else requested), or None."""
    if not isinstance(tres, dict):
        return None
    for kind in ("allocated", "requested"):
        entries = tres.get(kind) or []
        total = sum(
            int(e.get("count") or 0)
            for e in entries
            if isinstance(e, dict)
            and e.get("type") == "gres"
            and str(e.get("name", "")).split(":")[0] == "gpu"
            and int(e.get("count") or 0) > 0
        )
        if total:
            return total
    return None
