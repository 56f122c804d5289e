"""Burn-in (docs/repairs.md, Returning a node: burn-in) as a pure judgement: plain values in, a
verdict out.

A returned node comes back only once every one of its GPUs has reported a GEMM probe
(`gemm_tflops` and `gemm_checksum`) newer than the return request, the `slow_node` and
`sdc` comparisons pass on those values — the same detector functions the checks run — and
no XID or ECC event has been reported since the request.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from apps.health.choices import ResultStatus
from apps.health.detectors import GpuLatest, sdc, slow_node
from apps.health.detectors.findings import gpu_target
from apps.health.limits import Limits

PROBE_KEYS = ("gemm_tflops", "gemm_checksum")
EVENT_KINDS = ("xid", "ecc_dbe", "ecc_sbe")  # any of these since the return fails it


@dataclass(frozen=True)
class SinceEvent:
    """An XID or ECC event of the node reported after the return request."""

    gpu: int | None
    kind: str
    code: int | None
    at: dt.datetime


@dataclass(frozen=True)
class Verdict:
    """`pass`: return it to service; `fail`: the burn-in failed (keep it out, say why);
    `wait`: not enough fresh evidence yet."""

    outcome: Literal["pass", "fail", "wait"]
    note: str


def _gpu(index: int | None) -> str:
    return f"GPU {index}" if index is not None else "a GPU"


def _event_text(event: SinceEvent) -> str:
    if event.kind == "xid":
        what = f"XID {event.code}" if event.code is not None else "an XID"
    elif event.kind == "ecc_dbe":
        what = "ECC double-bit errors"
    else:
        what = "ECC single-bit errors"
    return f"{what} on {_gpu(event.gpu)} at {event.at:%Y-%m-%d %H:%M:%S} UTC"


def judge(
    *,
    hostname: str,
    requested_at: dt.datetime,
    gpus: Sequence[GpuLatest],
    events: Sequence[SinceEvent],
    limits: Limits,
) -> Verdict:
    """The burn-in verdict for `hostname`, returned at `requested_at`. `gpus` are the
    latest probe values of every GPU of its cluster (the comparisons are against the
    node's peers of the same model); `events` its XID/ECC events since the request."""
    if events:
        first = sorted(events, key=lambda e: e.at)[0]
        more = f" (and {len(events) - 1} more)" if len(events) > 1 else ""
        return Verdict("fail", f"{_event_text(first)} since the return{more}")
    mine = sorted((g for g in gpus if g.node == hostname), key=lambda g: g.index)
    if not mine:
        return Verdict("wait", "no GPU of this node is known yet: waiting for its probe")
    stale = [
        g.index
        for g in mine
        if g.probe_at is None
        or g.probe_at <= requested_at
        or any(k not in g.metrics for k in PROBE_KEYS)
    ]
    if stale:
        done = len(mine) - len(stale)
        which = f"GPU{'s' if len(stale) > 1 else ''} {', '.join(map(str, stale))}"
        return Verdict(
            "wait",
            f"waiting for a GEMM probe newer than the return from {which} "
            f"({done} of {len(mine)} reported)",
        )
    slow = [
        f
        for f in slow_node({}, gpus, limits=limits)
        if f.node == hostname and f.status != ResultStatus.PASS
    ]
    checks = [f for f in sdc([], {}, gpus, limits=limits) if f.node == hostname]
    corrupt = [f for f in checks if f.status != ResultStatus.PASS]
    bad = slow + corrupt
    if bad:
        text = "; ".join(f"GPU {f.target.rsplit('/', 1)[-1]}: {f.message}" for f in bad[:4])
        return Verdict("fail", f"the probe after the return failed: {text}")
    judged = {f.target for f in checks}
    unjudged = [g.index for g in mine if gpu_target(hostname, g.index) not in judged]
    if unjudged:
        return Verdict(
            "wait",
            "checksum not compared yet for GPU"
            f"{'s' if len(unjudged) > 1 else ''} {', '.join(map(str, unjudged))}: "
            "no majority of the model's nodes in the probe round, with at least 3 nodes "
            "other than this one voting for it",
        )
    newest = max(g.probe_at for g in mine if g.probe_at)
    return Verdict(
        "pass",
        f"all {len(mine)} GPUs probed at {newest:%Y-%m-%d %H:%M:%S} UTC: GEMM throughput "
        "within the limit of the model's median, checksums agree with the majority, "
        "no XID or ECC event since the return",
    )
