"""Rank a job's nodes by evidence, so the likely culprit of a hang or slowdown is first. Pure:
the reasons are worded in the active language (the job page's; the check reads only the
ranking)."""

from __future__ import annotations

import datetime as dt
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from apps.fleet.choices import NodeState


def _state_word(state: str) -> str:
    """A node state as a word in a sentence ("state down"), in the active language."""
    try:
        return str(NodeState(state).label).lower()
    except ValueError:
        return state


@dataclass(frozen=True)
class NodeEvidence:
    """What is known about one node of the job."""

    hostname: str
    state: str
    last_progress: dt.datetime | None = None  # newest per-node timing sample
    median_compute_s: float | None = None
    gpu_errors: int = 0  # XID / ECC double-bit events in the last hour
    failing: Sequence[str] = ()  # kinds failing on it now
    warning: Sequence[str] = ()


@dataclass
class Suspect:
    """A node's score and the reasons behind it."""

    hostname: str
    score: float
    reasons: list[str] = field(default_factory=list)


def rank(nodes: Sequence[NodeEvidence], *, step_time_s: float | None) -> list[Suspect]:
    """Highest score first; nodes with no evidence against them are left out.

    - lagging: a node whose newest sample trails the job's newest by more than two steps is
      where a hang waits (the others are blocked in a collective, waiting on it);
    - compute outlier: median compute time over the job's median (the straggler);
    - GPU errors in the last hour, checks failing or warning now, a state not healthy.
    """
    step = step_time_s or 10.0
    newest = max((n.last_progress for n in nodes if n.last_progress), default=None)
    medians = [n.median_compute_s for n in nodes if n.median_compute_s]
    job_median = statistics.median(medians) if medians else None
    out = []
    for n in nodes:
        s = Suspect(n.hostname, 0.0)
        if (
            newest
            and n.last_progress
            and (lag := (newest - n.last_progress).total_seconds()) > 2 * step
        ):
            s.score += 40 + min(lag / step, 60)
            s.reasons.append(
                _("last progress %(lag)s s behind the other nodes") % {"lag": f"{lag:.0f}"}
            )
        if job_median and n.median_compute_s and (ratio := n.median_compute_s / job_median) > 1.05:
            s.score += (ratio - 1) * 200
            s.reasons.append(_("computes %(ratio)s× the job median") % {"ratio": f"{ratio:.2f}"})
        if n.gpu_errors:
            s.score += 50 * n.gpu_errors
            s.reasons.append(
                ngettext(
                    "%(n)s XID/ECC event in the last hour",
                    "%(n)s XID/ECC events in the last hour",
                    n.gpu_errors,
                )
                % {"n": f"{n.gpu_errors:,}"}
            )
        for kind in n.failing:
            s.score += 30
            s.reasons.append(_("failing %(check)s") % {"check": kind})
        for kind in n.warning:
            s.score += 10
            s.reasons.append(_("warning %(check)s") % {"check": kind})
        if n.state != "healthy":
            s.score += 20
            s.reasons.append(_("state %(state)s") % {"state": _state_word(n.state)})
        if s.score > 0:
            out.append(s)
    return sorted(out, key=lambda s: (-s.score, s.hostname))
