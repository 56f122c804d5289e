"""Which rank hangs a job: the verdict on its ranks' stall reports (docs/checks.md, `job_hang`).
Pure: rank views and times in, a `Verdict` out.

A hang reports no error, and every rank of a synchronous job stops at once: those waiting
in a collective look exactly like the one that is the cause. What each rank is doing tells
them apart. Each rank of the attempt is one of

- *silent*: no active stall report (nor a `resumed` one newer than the job's last
  progress) while another rank reports a stall and the job made no progress for
  stall_s + 60 s — its process is likely gone; or a stalled rank whose newest report is
  older than 5 min + 60 s (the watchdog re-reports every 5 minutes) — it went quiet;
- *outside*: stalled, but not in a collective while most stalled ranks are, or in
  another frame than the one most stalled ranks share;
- *behind*: stalled at a lower step than the one most stalled ranks reached;
- *waiting*: stalled like the majority; *running*: none of these.

The marked ones (silent, outside, behind) are the culprits when there are at least one
and at most max(1, 10% of the ranks); otherwise no minority stands out (all wait in the
same place, or too many differ).

A stall report older than the job's last progress is over, whatever it said: a
synchronous job steps only when every rank does (its `resumed` report was lost).
"""

from __future__ import annotations

import datetime as dt
import math
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from apps.jobs.stacks import function_of

STALL_MIN_S = 60.0  # the shortest stall window
STALL_FACTOR = 5.0  # × the median step time
STALL_STEPS = 50  # step times in the median
GRACE_S = 60.0  # for the other ranks' reports to arrive
REREPORT_S = 300.0  # the watchdog re-reports a stall this often
MINORITY_SHARE = 0.10

SILENT = "silent"
OUTSIDE = "outside"
BEHIND = "behind"
WAITING = "waiting"
RUNNING = "running"
VERDICTS = (SILENT, OUTSIDE, BEHIND, WAITING, RUNNING)
MARKED = frozenset({SILENT, OUTSIDE, BEHIND})


def stall_window(step_times: Iterable[float]) -> float:
    """The stall window in seconds: max(60, 5 × the median of the last 50 finite step
    times); 60 without any."""
    finite = [float(t) for t in step_times if t is not None and math.isfinite(t)]
    recent = finite[-STALL_STEPS:]
    if not recent:
        return STALL_MIN_S
    return max(STALL_MIN_S, STALL_FACTOR * statistics.median(recent))


@dataclass(frozen=True, slots=True)
class RankView:
    """What the verdict reads of one rank: its newest report (all None without one)."""

    rank: int
    node: str
    report_at: dt.datetime | None = None
    resumed_at: dt.datetime | None = None  # set: the newest report is `resumed`
    last_step: int | None = None
    in_collective: bool | None = None
    frame: str = ""
    collective: str = ""
    stalled_since: dt.datetime | None = None
    first_report_at: dt.datetime | None = None

    @property
    def stalled(self) -> bool:
        """Its newest report is a stall."""
        return self.report_at is not None and self.resumed_at is None


@dataclass(frozen=True)
class Verdict:
    """The verdict on one attempt's ranks. `verdicts` maps every rank to one of VERDICTS;
    `culprits` (ascending) and their `culprit_nodes` are empty unless `minority`. `frame`,
    `collective` and `step` are what most actively stalled ranks share ("" / None when
    none). `due`: active stall reports come from at least half the ranks."""

    registered: int
    stall_s: float
    verdicts: Mapping[int, str]
    counts: Mapping[str, int]
    culprits: tuple[int, ...]
    culprit_nodes: tuple[str, ...]
    minority: bool
    frame: str
    collective: str
    step: int | None
    stalled: int  # ranks whose newest report is an active stall
    due: bool
    stalled_since: dt.datetime | None
    first_report_at: dt.datetime | None
    sentence: str


def _majority(values: Sequence[object]) -> object | None:
    """The value more than half of `values` hold, or None."""
    if not values:
        return None
    value, count = Counter(values).most_common(1)[0]
    return value if count * 2 > len(values) else None


def _mode(values: Sequence[str]) -> str:
    """The most common value (the first in order among equals), or ""."""
    if not values:
        return ""
    counts = Counter(values)
    top = max(counts.values())
    return min(v for v, c in counts.items() if c == top)


def judge(
    ranks: Sequence[RankView],
    *,
    progress_at: dt.datetime | None,
    stall_s: float,
    now: dt.datetime,
) -> Verdict:
    """The verdict on an attempt's `ranks` at `now`, given the job's last progress (None:
    none known) and its stall window."""
    quiet_limit = now - dt.timedelta(seconds=REREPORT_S + GRACE_S)

    def over(r: RankView) -> bool:  # a stall the job's progress since has ended
        return progress_at is not None and r.report_at is not None and r.report_at < progress_at

    stalled = [r for r in ranks if r.stalled and not over(r)]
    active = [r for r in stalled if r.report_at is not None and r.report_at >= quiet_limit]
    no_progress = progress_at is None or (now - progress_at).total_seconds() > stall_s + GRACE_S

    live = {r.rank for r in active}
    verdicts: dict[int, str] = {}
    for r in stalled:
        if r.rank not in live:
            verdicts[r.rank] = SILENT  # stalled, then quiet for longer than a re-report
    if active and no_progress:
        for r in ranks:
            if r.rank in verdicts or r.rank in live:
                continue
            resumed_since = r.resumed_at is not None and (
                progress_at is None or r.resumed_at > progress_at
            )
            if not resumed_since:
                verdicts[r.rank] = SILENT

    shared_in = _majority([r.in_collective for r in active if r.in_collective is not None])
    shared_frame = _majority([r.frame for r in active])
    step = _majority([r.last_step for r in active if r.last_step is not None])
    for r in active:
        if (shared_in is True and r.in_collective is False) or (
            shared_frame is not None and r.frame != shared_frame
        ):
            verdicts[r.rank] = OUTSIDE
        elif isinstance(step, int) and r.last_step is not None and r.last_step < step:
            verdicts[r.rank] = BEHIND
        else:
            verdicts[r.rank] = WAITING
    for r in ranks:
        verdicts.setdefault(r.rank, RUNNING)

    counts = Counter(verdicts.values())
    marked = sorted(n for n, v in verdicts.items() if v in MARKED)
    bound = max(1.0, MINORITY_SHARE * len(ranks))
    minority = 1 <= len(marked) <= bound
    culprits = tuple(marked) if minority else ()
    node_of = {r.rank: r.node for r in ranks}
    waiting = [r for r in active if verdicts[r.rank] == WAITING]
    frame = shared_frame if isinstance(shared_frame, str) else _mode([r.frame for r in active])
    collective = _mode([r.collective for r in (waiting or active) if r.collective])
    verdict = Verdict(
        registered=len(ranks),
        stall_s=stall_s,
        verdicts=verdicts,
        counts={v: counts.get(v, 0) for v in VERDICTS},
        culprits=culprits,
        culprit_nodes=tuple(sorted({node_of[n] for n in culprits})),
        minority=minority,
        frame=frame,
        collective=collective,
        step=step if isinstance(step, int) else None,
        stalled=len(active),
        due=bool(ranks) and len(active) * 2 >= len(ranks),
        stalled_since=min((r.stalled_since for r in active if r.stalled_since), default=None),
        first_report_at=min((r.first_report_at for r in active if r.first_report_at), default=None),
        sentence="",
    )
    return replace(verdict, sentence=_sentence(verdict, ranks, progress_at=progress_at, now=now))


# The thousands of a number in a sentence are kept apart by a narrow no-break space (U+202F,
# the SI's thin space): "41 216" reads as one number and never wraps after "41".
THIN = "\u202f"


def number(n: int) -> str:
    """An integer with its thousands apart, never wrapped: 41 216 (a narrow no-break space).
    Every number of a verdict's sentence and of the hang check's message is written so."""
    return f"{n:,}".replace(",", THIN)


def _ranks(n: int) -> str:
    return f"{number(n)} rank" + ("" if n == 1 else "s")


def _where(frame: str, collective: str) -> str:
    """Where ranks wait: the collective, else the frame's function."""
    place = collective or function_of(frame)
    return f" in `{place}`" if place else ""


def _waiting_clause(v: Verdict, *, all_of: int | None = None) -> str:
    n = v.counts[WAITING]
    at = f" at step {number(v.step)}" if v.step is not None else ""
    who = f"all {_ranks(n)}" if all_of is not None and n == all_of and n > 1 else _ranks(n)
    verb = "waits" if n == 1 and not who.startswith("all") else "wait"
    return f"{who} {verb}{_where(v.frame, v.collective)}{at}"


def _culprit_clause(
    r: RankView, verdict: str, *, progress_at: dt.datetime | None, now: dt.datetime
) -> str:
    who = f"rank {r.rank} on {r.node}"
    if verdict == SILENT:
        no_step = (
            f"no step for {number(int((now - progress_at).total_seconds()))} s"
            if progress_at is not None
            else "no step seen"
        )
        if r.stalled and r.report_at is not None:
            quiet = number(int((now - r.report_at).total_seconds()))
            return f"{who} went silent (no report for {quiet} s, {no_step})"
        return f"{who} went silent (no report, {no_step})"
    place = function_of(r.frame)
    where = f"is in `{place}`" if place else "is not in the collective"
    if r.last_step is not None:
        return f"{who} last stepped at {number(r.last_step)} and {where}"
    return f"{who} {where}"


CLAUSES_SHOWN = 3


def _sentence(
    v: Verdict, ranks: Sequence[RankView], *, progress_at: dt.datetime | None, now: dt.datetime
) -> str:
    """One plain sentence: who the culprits are and where the others wait, or why no
    minority stands out."""
    if not ranks:
        return "no ranks registered"
    if v.minority:
        by_rank = {r.rank: r for r in ranks}
        clauses = [
            _culprit_clause(by_rank[n], v.verdicts[n], progress_at=progress_at, now=now)
            for n in v.culprits[:CLAUSES_SHOWN]
        ]
        if len(v.culprits) > CLAUSES_SHOWN:
            clauses.append(f"{number(len(v.culprits) - CLAUSES_SHOWN)} more ranks stand out")
        if v.counts[WAITING]:
            clauses.append(_waiting_clause(v))
        return "; ".join(clauses)
    marked = sum(v.counts[k] for k in (SILENT, OUTSIDE, BEHIND))
    if marked == 0 and v.stalled == 0:
        return f"no stall: {_ranks(len(ranks))} registered, none reports a stall"
    if marked == 0:
        if v.counts[WAITING] == len(ranks):
            return f"no minority: {_waiting_clause(v, all_of=len(ranks))}"
        running = v.counts[RUNNING]
        return f"no minority: {_waiting_clause(v)}; {_ranks(running)} running"
    kinds = ", ".join(
        f"{number(v.counts[k])} {k}" for k in (SILENT, OUTSIDE, BEHIND) if v.counts[k]
    )
    text = f"no minority: {number(marked)} of {_ranks(len(ranks))} differ ({kinds})"
    if v.counts[WAITING]:
        text += f"; {_waiting_clause(v)}"
    return text
