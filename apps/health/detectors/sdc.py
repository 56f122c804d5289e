"""`sdc`: silent data corruption — non-finite losses, or a GEMM checksum that disagrees with
the majority of its model's GPUs in one probe round (docs/checks.md, `sdc`)."""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from apps.common.words import counted
from apps.fleet.choices import NodeState
from apps.fleet.gpu_models import canonical_model
from apps.health.detectors.findings import (
    Finding,
    Outcome,
    failed,
    gpu_target,
    job_target,
    passed,
)
from apps.health.detectors.gpus import GpuLatest
from apps.incidents.choices import Category, Severity

if TYPE_CHECKING:  # the check's thresholds, declared by its plug-in
    from apps.health.checks.sdc import SdcLimits

KIND = "sdc"
CORRUPT_JOB = Outcome(Category.SILENT_DATA_CORRUPTION, Severity.SEV2)
CORRUPT_GPU = Outcome(Category.SILENT_DATA_CORRUPTION, Severity.SEV2, node_state=NodeState.SUSPECT)
MIN_OTHER_VOTERS = 3  # nodes other than a GPU's own that must vote for the value it missed


@dataclass(frozen=True)
class NonFinite:
    """A job-wide sample with a non-finite loss or grad norm."""

    job: int
    ts: dt.datetime
    step: int
    what: str


def sdc(
    bad_samples: Sequence[NonFinite],
    running_jobs: Mapping[int, str],
    gpus: Sequence[GpuLatest],
    *,
    limits: SdcLimits,
    rounds: Mapping[str, Round] | None = None,
) -> list[Finding]:
    """A non-finite loss/grad norm fails its job; a GPU whose latest checksum (within one
    probe round, by receive time, of the newest of its model) differs from the vote of more
    than half of the round's nodes, at least 3 of them other than its own, fails its node.
    Votes are counted by node (docs/checks.md, `sdc`); otherwise there is no verdict.

    With `rounds` (each model's round, figured over the whole cluster), `gpus` may be only
    some of the cluster's GPUs (docs/checks.md, Candidates): each is judged against its
    model's round as it would be among all of them."""
    return _losses(bad_samples, running_jobs) + _checksums(gpus, limits, rounds)


def _losses(bad_samples: Sequence[NonFinite], running_jobs: Mapping[int, str]) -> list[Finding]:
    by_job: dict[int, list[NonFinite]] = defaultdict(list)
    for sample in bad_samples:
        by_job[sample.job].append(sample)
    out = []
    for job, name in running_jobs.items():
        bad = sorted(by_job.get(job, []), key=lambda s: s.ts)
        if not bad:
            out.append(passed(KIND, job_target(job), f"{name}: losses finite", job=job))
            continue
        message = (
            f"{name}: {counted(len(bad), 'step')} with non-finite values, "
            f"first at step {bad[0].step} ({bad[0].what})"
        )
        details = {"steps": [s.step for s in bad[:50]], "first": bad[0].what}
        out.append(
            failed(
                KIND,
                job_target(job),
                message,
                details,
                outcome=CORRUPT_JOB,
                job=job,
                occurred_at=bad[0].ts,
            )
        )
    return out


# A GPU that agrees with its round: what the plug-in's candidates query takes as passing
# unchanged (checks/sdc.py).
AGREES = "checksum agrees with the majority of nodes"


@dataclass(frozen=True)
class Round:
    """One model's probe round (docs/checks.md, `sdc`): when its newest probe arrived, each
    voting node's vote, and how many nodes it holds (those casting no vote included)."""

    newest: dt.datetime
    votes: dict[str, float]
    nodes: int

    def holds(self, probe_at: dt.datetime, round_s: int) -> bool:
        """Whether a probe received at `probe_at` is in this round."""
        return (self.newest - probe_at).total_seconds() <= round_s

    def winner(self) -> tuple[float, int] | None:
        """The value more than half of the round's nodes voted for and how many did; None
        when no value has such a majority."""
        if not self.votes:
            return None
        value, count = Counter(self.votes.values()).most_common(1)[0]
        if count * 2 <= self.nodes:
            return None  # no strict majority of the round's nodes: nothing to compare against
        return value, count


def tally_votes(by_node: Mapping[str, Counter[float]]) -> dict[str, float]:
    """Each node's vote from how many of its GPUs reported each checksum: the value most of
    them reported; a node whose GPUs split evenly between its top values casts no vote."""
    votes = {}
    for node, counts in by_node.items():
        top = counts.most_common(2)
        if len(top) == 1 or top[0][1] > top[1][1]:
            votes[node] = top[0][0]
    return votes


def node_votes(round_: Sequence[GpuLatest]) -> dict[str, float]:
    """Each node's vote in a probe round: the checksum most of its GPUs reported. A node
    whose GPUs split evenly between its top values casts no vote."""
    by_node: dict[str, Counter[float]] = defaultdict(Counter)
    for gpu in round_:
        by_node[gpu.node][gpu.metrics["gemm_checksum"]] += 1
    return tally_votes(by_node)


def votes_in(gpu: GpuLatest) -> bool:
    """Whether a GPU takes part in a vote: a numeric checksum and a receive time."""
    value = gpu.metrics.get("gemm_checksum")
    return isinstance(value, int | float) and gpu.probe_at is not None


def probe_rounds(gpus: Sequence[GpuLatest], limits: SdcLimits) -> dict[str, Round]:
    """Each model's probe round among `gpus` (every GPU of the cluster)."""
    by_model: dict[str, list[GpuLatest]] = defaultdict(list)
    for gpu in gpus:
        if votes_in(gpu):
            # one model under any of its names (docs/pages.md, One name per model)
            by_model[canonical_model(gpu.model)].append(gpu)
    out = {}
    for model, members in by_model.items():
        # probe_at is when KUAE received the probe, so no stamp can move a GPU out of it.
        newest = max(g.probe_at for g in members if g.probe_at)
        round_ = [
            g
            for g in members
            if g.probe_at and (newest - g.probe_at).total_seconds() <= limits.sdc_round_s
        ]
        out[model] = Round(newest, node_votes(round_), len({g.node for g in round_}))
    return out


def _checksums(
    gpus: Sequence[GpuLatest], limits: SdcLimits, rounds: Mapping[str, Round] | None
) -> list[Finding]:
    if rounds is None:
        rounds = probe_rounds(gpus, limits)
    # model → its round and the value it compares against (figured once, not per GPU)
    judged = {m: (r, won) for m, r in rounds.items() if (won := r.winner()) is not None}
    out = []
    for gpu in gpus:
        if gpu.probe_at is None or not votes_in(gpu):
            continue
        model = canonical_model(gpu.model)
        if model not in judged:
            continue  # no round, or no value more than half of its nodes voted for
        round_, (value, count) = judged[model]
        if not round_.holds(gpu.probe_at, limits.sdc_round_s):
            continue
        nodes = round_.nodes
        mine = gpu.metrics["gemm_checksum"]
        target = gpu_target(gpu.node, gpu.index)
        # Nodes other than this GPU's own that voted for the round's value.
        voters = count - (round_.votes.get(gpu.node) == value)
        details = {"checksum": mine, "majority": value, "voters": count, "nodes": nodes}
        if mine == value:
            out.append(passed(KIND, target, AGREES, details, node=gpu.node))
            continue
        if voters < MIN_OTHER_VOTERS:
            continue  # too few other nodes to outvote this one: no verdict
        message = (
            f"GEMM checksum {mine!r} differs from {value!r}, the vote of {count} of the "
            f"{nodes} {model} nodes in the probe round"
        )
        out.append(
            failed(
                KIND,
                target,
                message,
                details,
                outcome=CORRUPT_GPU,
                node=gpu.node,
                occurred_at=gpu.probe_at,
            )
        )
    return out
