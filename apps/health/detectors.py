"""The health checks of CONTRACT §5 as pure functions: plain values in, findings out.

No database here; `apps.health.runner` loads the inputs in a few set-based queries and
applies the outcomes. Every detector returns a finding for every target it looked at —
`pass` included — so a condition that clears shows as pass on the next run.
"""

from __future__ import annotations

import datetime as dt
import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

MEMORY_XIDS = frozenset({48, 63, 64, 92, 94, 95})
BUS_XIDS = frozenset({74, 79})
APP_XIDS = frozenset({13, 31, 43})
SKIP_HEARTBEAT = frozenset({"drained", "maintenance"})


@dataclass(frozen=True)
class Limits:
    """Thresholds (CONTRACT §5 defaults); a cluster's own come from its Thresholds row."""

    heartbeat_s: float = 180
    heartbeat_cluster_share: float = 0.10
    hang_min_s: float = 600
    hang_step_factor: float = 10
    hang_window: int = 50
    hang_no_metrics_s: float = 1800
    slow_factor: float = 1.10
    slow_samples: int = 20
    slow_min_samples: int = 5
    slow_min_nodes: int = 4
    gemm_factor: float = 0.90
    sdc_round_s: float = 600
    temp_c: float = 90
    mem_temp_c: float = 95
    drain_cap_share: float = 0.02


@dataclass(frozen=True)
class Finding:
    """A verdict on one target, and what it should cause if it is not a pass."""

    kind: str
    target: str
    status: str
    message: str
    details: dict = field(default_factory=dict)
    node: str | None = None
    job: int | None = None
    category: str | None = None  # incident category; None → no incident
    severity: str = "sev3"
    interrupts_job: bool = False
    node_state: str | None = None  # state to put the node in
    occurred_at: dt.datetime | None = None


def _finite(values: Iterable[float | None]) -> list[float]:
    return [v for v in values if v is not None and math.isfinite(v)]


# --- heartbeat -------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeSeen:
    """A node's state and the last time anything arrived from it (server time)."""

    hostname: str
    state: str
    last_seen: dt.datetime | None


def heartbeat(
    nodes: Sequence[NodeSeen], *, now: dt.datetime, limits: Limits, cluster: str
) -> list[Finding]:
    """Nodes silent for longer than the limit fail (node `down`); drained, maintenance and
    never-seen nodes are skipped, as are down nodes still silent. More than the cluster
    share silent at once is the monitoring path: one cluster finding, no node changes."""
    silent: list[tuple[NodeSeen, float]] = []
    out: list[Finding] = []
    for node in nodes:
        if node.state in SKIP_HEARTBEAT or node.last_seen is None:
            continue
        age = (now - node.last_seen).total_seconds()
        if age <= limits.heartbeat_s:
            out.append(
                Finding(
                    "heartbeat",
                    f"node:{node.hostname}",
                    "pass",
                    "heard from within the limit",
                    {"silent_s": round(age, 1)},
                    node=node.hostname,
                )
            )
        elif node.state != "down":
            silent.append((node, age))
    considered = sum(1 for n in nodes if n.state not in SKIP_HEARTBEAT and n.last_seen is not None)
    if (
        silent
        and len(silent) > limits.heartbeat_cluster_share * max(considered, 1)
        and len(silent) > 1
    ):
        hosts = sorted(n.hostname for n, _ in silent)
        out.append(
            Finding(
                "heartbeat",
                f"cluster:{cluster}",
                "fail",
                f"{len(silent)} of {considered} nodes silent at once: "
                "the monitoring path, not the nodes",
                {"silent_nodes": hosts[:200], "silent_count": len(silent)},
                category="node_unreachable",
                severity="sev2",
                occurred_at=min(n.last_seen for n, _ in silent if n.last_seen),
            )
        )
        return out
    for node, age in silent:
        out.append(
            Finding(
                "heartbeat",
                f"node:{node.hostname}",
                "fail",
                f"no heartbeat, telemetry or metric for {age:.0f} s "
                f"(limit {limits.heartbeat_s:.0f} s)",
                {
                    "silent_s": round(age, 1),
                    "last_seen": node.last_seen.isoformat() if node.last_seen else None,
                },
                node=node.hostname,
                category="node_unreachable",
                severity="sev2",
                interrupts_job=True,
                node_state="down",
                occurred_at=node.last_seen,
            )
        )
    return out


# --- job_hang --------------------------------------------------------------------------


@dataclass(frozen=True)
class JobProgress:
    """A running job's start, newest job-wide sample and recent step times."""

    job: int
    name: str
    started_at: dt.datetime | None
    newest: dt.datetime | None
    step_times: Sequence[float] = ()


def job_hang(jobs: Sequence[JobProgress], *, now: dt.datetime, limits: Limits) -> list[Finding]:
    """A running job whose newest metric is older than max(600 s, 10 × median step time of
    its last 50 samples) hangs; with no metric at all it hangs 1,800 s after it started."""
    out = []
    for j in jobs:
        target = f"job:{j.job}"
        if j.newest is None:
            if j.started_at is None:
                continue
            waited = (now - j.started_at).total_seconds()
            if waited > limits.hang_no_metrics_s:
                out.append(
                    Finding(
                        "job_hang",
                        target,
                        "fail",
                        f"{j.name}: no metric in {waited:.0f} s since it started",
                        {"waited_s": round(waited, 1), "limit_s": limits.hang_no_metrics_s},
                        job=j.job,
                        category="hang",
                        severity="sev1",
                        interrupts_job=True,
                        occurred_at=j.started_at,
                    )
                )
            else:
                out.append(
                    Finding(
                        "job_hang",
                        target,
                        "pass",
                        f"{j.name}: started recently",
                        job=j.job,
                    )
                )
            continue
        steps = _finite(j.step_times)[-limits.hang_window :]
        median = statistics.median(steps) if steps else 0.0
        limit = max(limits.hang_min_s, limits.hang_step_factor * median)
        age = (now - j.newest).total_seconds()
        details = {
            "since_progress_s": round(age, 1),
            "limit_s": round(limit, 1),
            "median_step_s": round(median, 3),
        }
        if age > limit:
            out.append(
                Finding(
                    "job_hang",
                    target,
                    "fail",
                    f"{j.name}: no progress for {age:.0f} s (limit {limit:.0f} s)",
                    details,
                    job=j.job,
                    category="hang",
                    severity="sev1",
                    interrupts_job=True,
                    occurred_at=j.newest,
                )
            )
        else:
            out.append(
                Finding(
                    "job_hang",
                    target,
                    "pass",
                    f"{j.name}: progressing",
                    details,
                    job=j.job,
                )
            )
    return out


# --- slow_node -------------------------------------------------------------------------


@dataclass(frozen=True)
class GpuLatest:
    """A GPU's latest values, as the slow-node, sdc and thermal checks see them."""

    node: str
    index: int
    model: str
    metrics: dict
    updated_at: dt.datetime | None
    probe_at: dt.datetime | None = None


def slow_node(
    job_nodes: dict[int, dict[str, Sequence[float]]],
    gpus: Sequence[GpuLatest],
    *,
    limits: Limits,
    job_names: dict[int, str] | None = None,
) -> list[Finding]:
    """Per running job, a node whose median compute time (last 20 samples, ≥ 5 of them)
    exceeds 1.10 × the median over its nodes (≥ 4 nodes) is slow; so is a GPU whose latest
    GEMM TFLOP/s is under 0.90 × the median of its model in the cluster."""
    out: list[Finding] = []
    names = job_names or {}
    for job, per_node in job_nodes.items():
        medians = {}
        for host, values in per_node.items():
            values = _finite(values)[-limits.slow_samples :]
            if len(values) >= limits.slow_min_samples:
                medians[host] = statistics.median(values)
        if len(medians) < limits.slow_min_nodes:
            continue
        overall = statistics.median(medians.values())
        for host, m in sorted(medians.items()):
            ratio = m / overall if overall > 0 else 1.0
            details = {
                "job": job,
                "node_median_compute_s": round(m, 4),
                "job_median_compute_s": round(overall, 4),
                "ratio": round(ratio, 4),
            }
            target = f"node:{host}"
            if ratio > limits.slow_factor:
                out.append(
                    Finding(
                        "slow_node",
                        target,
                        "warn",
                        f"computes {ratio:.2f}× the median of job {names.get(job, job)} "
                        f"({m:.3f} s vs {overall:.3f} s)",
                        details,
                        node=host,
                        job=job,
                        category="slow_node",
                        severity="sev3",
                        node_state="suspect",
                    )
                )
            else:
                out.append(
                    Finding(
                        "slow_node",
                        target,
                        "pass",
                        "compute time within the limit",
                        details,
                        node=host,
                        job=job,
                    )
                )
    by_model: dict[str, list[GpuLatest]] = defaultdict(list)
    for gpu in gpus:
        value = gpu.metrics.get("gemm_tflops")
        if isinstance(value, int | float) and math.isfinite(value):
            by_model[gpu.model].append(gpu)
    for model, members in by_model.items():
        median = statistics.median(g.metrics["gemm_tflops"] for g in members)
        for gpu in members:
            value = gpu.metrics["gemm_tflops"]
            target = f"gpu:{gpu.node}/{gpu.index}"
            details = {"gemm_tflops": value, "model_median": median, "model": model}
            if median > 0 and value < limits.gemm_factor * median:
                out.append(
                    Finding(
                        "slow_node",
                        target,
                        "warn",
                        f"GEMM {value:.1f} TFLOP/s is {value / median:.0%} of the {model} median "
                        f"({median:.1f})",
                        details,
                        node=gpu.node,
                        category="slow_node",
                        severity="sev3",
                        node_state="suspect",
                    )
                )
            else:
                out.append(
                    Finding(
                        "slow_node",
                        target,
                        "pass",
                        "GEMM throughput within the limit",
                        details,
                        node=gpu.node,
                    )
                )
    return out


# --- sdc -------------------------------------------------------------------------------


@dataclass(frozen=True)
class NonFinite:
    """A job-wide sample with a non-finite loss or grad norm."""

    job: int
    ts: dt.datetime
    step: int
    what: str


def sdc(
    bad_samples: Sequence[NonFinite],
    running_jobs: dict[int, str],
    gpus: Sequence[GpuLatest],
    *,
    limits: Limits,
) -> list[Finding]:
    """A non-finite loss/grad norm fails its job; a GPU whose latest checksum (within one
    probe round of the newest of its model) differs from what more than half reported
    fails its node. Without a strict majority there is no verdict."""
    out: list[Finding] = []
    by_job: dict[int, list[NonFinite]] = defaultdict(list)
    for sample in bad_samples:
        by_job[sample.job].append(sample)
    for job, name in running_jobs.items():
        bad = sorted(by_job.get(job, []), key=lambda s: s.ts)
        if bad:
            out.append(
                Finding(
                    "sdc",
                    f"job:{job}",
                    "fail",
                    f"{name}: {len(bad)} step(s) with non-finite values, "
                    f"first at step {bad[0].step} ({bad[0].what})",
                    {"steps": [s.step for s in bad[:50]], "first": bad[0].what},
                    job=job,
                    category="silent_data_corruption",
                    severity="sev2",
                    occurred_at=bad[0].ts,
                )
            )
        else:
            out.append(Finding("sdc", f"job:{job}", "pass", f"{name}: losses finite", job=job))
    by_model: dict[str, list[GpuLatest]] = defaultdict(list)
    for gpu in gpus:
        value = gpu.metrics.get("gemm_checksum")
        if isinstance(value, int | float) and gpu.probe_at is not None:
            by_model[gpu.model].append(gpu)
    for model, members in by_model.items():
        newest = max(g.probe_at for g in members if g.probe_at)
        round_ = [
            g
            for g in members
            if g.probe_at and (newest - g.probe_at).total_seconds() <= limits.sdc_round_s
        ]
        votes = Counter(g.metrics["gemm_checksum"] for g in round_)
        if not votes:
            continue
        value, count = votes.most_common(1)[0]
        if count * 2 <= len(round_):
            continue  # no strict majority: nothing to compare against
        for gpu in round_:
            mine = gpu.metrics["gemm_checksum"]
            target = f"gpu:{gpu.node}/{gpu.index}"
            details = {"checksum": mine, "majority": value, "agree": count, "round": len(round_)}
            if mine != value:
                out.append(
                    Finding(
                        "sdc",
                        target,
                        "fail",
                        f"GEMM checksum {mine!r} differs from the {count} of {len(round_)} {model} "
                        f"GPUs that computed {value!r}",
                        details,
                        node=gpu.node,
                        category="silent_data_corruption",
                        severity="sev2",
                        node_state="suspect",
                        occurred_at=gpu.probe_at,
                    )
                )
            else:
                out.append(
                    Finding(
                        "sdc",
                        target,
                        "pass",
                        "checksum agrees with the majority",
                        details,
                        node=gpu.node,
                    )
                )
    return out


# --- gpu_errors ------------------------------------------------------------------------


@dataclass(frozen=True)
class GpuEvent:
    """An XID or ECC event that arrived since the previous run."""

    node: str
    gpu: int
    at: dt.datetime
    kind: str  # xid | ecc_dbe | ecc_sbe | counter_reset
    value: float


def gpu_errors(events: Sequence[GpuEvent], gpus: Sequence[GpuLatest]) -> list[Finding]:
    """ECC double-bit growth or a new memory XID → `gpu_hbm`; a new XID 74/79 → `gpu`; both
    fail and drain the node. Application XIDs (13, 31, 43) warn without an incident. Counter
    resets and persisting XIDs are not errors (the intake only records new values)."""
    worst: dict[tuple[str, int], Finding] = {}
    for e in sorted(events, key=lambda e: e.at):
        key = (e.node, e.gpu)
        target = f"gpu:{e.node}/{e.gpu}"
        xid = int(e.value) if e.kind == "xid" else None
        finding = None
        if e.kind == "ecc_dbe" or (xid is not None and xid in MEMORY_XIDS):
            what = "ECC double-bit errors grew to" if e.kind == "ecc_dbe" else "XID"
            finding = Finding(
                "gpu_errors",
                target,
                "fail",
                f"{what} {e.value:g} on GPU {e.gpu}",
                {"event": e.kind, "value": e.value, "at": e.at.isoformat()},
                node=e.node,
                category="gpu_hbm",
                severity="sev2",
                interrupts_job=True,
                node_state="drained",
                occurred_at=e.at,
            )
        elif xid is not None and xid in BUS_XIDS:
            finding = Finding(
                "gpu_errors",
                target,
                "fail",
                f"XID {xid} on GPU {e.gpu}"
                + (" (fallen off the bus)" if xid == 79 else " (NVLink error)"),
                {"event": "xid", "value": xid, "at": e.at.isoformat()},
                node=e.node,
                category="gpu",
                severity="sev2",
                interrupts_job=True,
                node_state="drained",
                occurred_at=e.at,
            )
        elif xid is not None and xid in APP_XIDS:
            finding = Finding(
                "gpu_errors",
                target,
                "warn",
                f"XID {xid} on GPU {e.gpu} (application-level)",
                {"event": "xid", "value": xid, "at": e.at.isoformat()},
                node=e.node,
            )
        if finding and (key not in worst or _rank(finding) > _rank(worst[key])):
            worst[key] = finding
    out = list(worst.values())
    for gpu in gpus:
        if (gpu.node, gpu.index) not in worst:
            out.append(
                Finding(
                    "gpu_errors",
                    f"gpu:{gpu.node}/{gpu.index}",
                    "pass",
                    "no new XID or ECC error",
                    node=gpu.node,
                )
            )
    return out


def _rank(f: Finding) -> int:
    return {"pass": 0, "warn": 1, "fail": 2}[f.status]


# --- thermal ---------------------------------------------------------------------------


def thermal(gpus: Sequence[GpuLatest], *, now: dt.datetime, limits: Limits) -> list[Finding]:
    """A GPU at or over the temperature limits (fresh values only) warns: `gpu_thermal`."""
    out = []
    for gpu in gpus:
        if gpu.updated_at is None or (now - gpu.updated_at).total_seconds() > limits.heartbeat_s:
            continue
        temp, mem = gpu.metrics.get("temp_c"), gpu.metrics.get("mem_temp_c")
        target = f"gpu:{gpu.node}/{gpu.index}"
        details = {"temp_c": temp, "mem_temp_c": mem}
        hot = []
        if isinstance(temp, int | float) and temp >= limits.temp_c:
            hot.append(f"GPU {temp:g} °C ≥ {limits.temp_c:g}")
        if isinstance(mem, int | float) and mem >= limits.mem_temp_c:
            hot.append(f"HBM {mem:g} °C ≥ {limits.mem_temp_c:g}")
        if hot:
            out.append(
                Finding(
                    "thermal",
                    target,
                    "warn",
                    f"GPU {gpu.index}: " + ", ".join(hot),
                    details,
                    node=gpu.node,
                    category="gpu_thermal",
                    severity="sev4",
                )
            )
        else:
            out.append(Finding("thermal", target, "pass", "within limits", details, node=gpu.node))
    return out


# --- preflight -------------------------------------------------------------------------


def preflight(
    nodes: Sequence[tuple[str, str, str]], recent_fails: dict[str, list[str]]
) -> list[dict]:
    """Problems that should stop a job from starting: a node that is not healthy, or that
    failed a check in the last hour. `nodes` are (hostname, state, reason)."""
    problems = []
    for hostname, state, reason in nodes:
        if state != "healthy":
            problems.append(
                {"node": hostname, "reason": f"state {state}" + (f": {reason}" if reason else "")}
            )
        for kind in recent_fails.get(hostname, []):
            problems.append(
                {"node": hostname, "reason": f"failed the {kind} check in the last hour"}
            )
    return problems
