"""The hang verdict on hand-built rank views (apps/jobs/hang.py), the stall window, and what a
stack says (apps/jobs/stacks.py): pure, no database."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import math

import pytest

from apps.jobs.hang import RankView, judge, stall_window
from apps.jobs.stacks import Frame, collective_of, is_library, stack_of, training_frame

NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)
TRAIN = "train_step (/home/u/train.py:88)"
LOADER = "DataLoader.__next__ (/home/u/data.py:40)"


def ago(seconds: float) -> dt.datetime:
    return NOW - dt.timedelta(seconds=seconds)


def waiting(rank: int, **changes: object) -> RankView:
    """A rank stalled 30 s ago in all_reduce at step 120, like the majority."""
    view = RankView(
        rank=rank,
        node=f"gpu{rank // 8:03d}",
        report_at=ago(30),
        last_step=120,
        in_collective=True,
        frame=TRAIN,
        collective="all_reduce",
        stalled_since=ago(90),
        first_report_at=ago(30),
    )
    return dataclasses.replace(view, **changes)


def silent_view(rank: int) -> RankView:
    return RankView(rank=rank, node=f"gpu{rank // 8:03d}")


def verdict_of(ranks: list[RankView], *, progress: float = 400, stall_s: float = 60):
    return judge(ranks, progress_at=ago(progress), stall_s=stall_s, now=NOW)


def test_one_rank_in_another_frame_is_the_culprit():
    ranks = [waiting(r) for r in range(8)]
    ranks[3] = waiting(3, frame=LOADER)
    v = verdict_of(ranks)
    assert v.verdicts[3] == "outside" and v.minority and v.culprits == (3,)
    assert v.culprit_nodes == ("gpu000",)
    assert v.frame == TRAIN and v.collective == "all_reduce" and v.step == 120
    assert v.counts == {"silent": 0, "outside": 1, "behind": 0, "waiting": 7, "running": 0}
    assert v.due and v.stalled == 8


def test_one_rank_not_in_the_collective_is_outside():
    ranks = [waiting(r) for r in range(8)]
    ranks[5] = waiting(5, in_collective=False, collective="")
    v = verdict_of(ranks)
    assert v.verdicts[5] == "outside" and v.culprits == (5,)


def test_one_rank_at_a_lower_step_is_behind():
    ranks = [waiting(r) for r in range(8)]
    ranks[2] = waiting(2, last_step=119)
    v = verdict_of(ranks)
    assert v.verdicts[2] == "behind" and v.culprits == (2,) and v.step == 120
    assert "rank 2 on gpu000 last stepped at 119 and is in `train_step`" in v.sentence


def test_a_rank_without_a_report_is_silent_once_the_job_made_no_progress_for_stall_s_plus_60():
    ranks = [waiting(r) for r in range(7)] + [silent_view(7)]
    late = verdict_of(ranks, progress=130, stall_s=60)  # 130 > 60 + 60
    assert late.verdicts[7] == "silent" and late.culprits == (7,) and late.minority
    early = verdict_of(ranks, progress=100, stall_s=60)  # the others may still report
    assert early.verdicts[7] == "running" and not early.minority and early.culprits == ()
    assert early.sentence == (
        "no minority: 7 ranks wait in `all_reduce` at step 120; 1 rank running"
    )


def test_no_stall_anywhere_marks_nobody_silent():
    v = verdict_of([silent_view(r) for r in range(8)], progress=3_000)
    assert set(v.verdicts.values()) == {"running"} and not v.due and not v.minority
    assert v.sentence == "no stall: 8 ranks registered, none reports a stall"


def test_a_stalled_rank_whose_report_is_older_than_six_minutes_went_silent():
    ranks = [waiting(r) for r in range(8)]
    ranks[4] = waiting(4, report_at=ago(361), first_report_at=ago(361))
    v = verdict_of(ranks, progress=1_000)
    assert v.verdicts[4] == "silent" and v.culprits == (4,)
    assert v.stalled == 7  # its stall no longer counts as active
    said = "rank 4 on gpu000 went silent (no report for 361 s, no step for 1\u202f000 s)"
    assert said in v.sentence
    fresh = verdict_of([*ranks[:4], waiting(4, report_at=ago(359)), *ranks[5:]], progress=1_000)
    assert fresh.verdicts[4] == "waiting"


def test_a_resumed_rank_is_not_silent_when_it_resumed_after_the_last_progress():
    ranks = [waiting(r) for r in range(7)]
    resumed = RankView(rank=7, node="gpu000", report_at=ago(50), resumed_at=ago(50))
    assert verdict_of([*ranks, resumed], progress=400).verdicts[7] == "running"
    old = dataclasses.replace(resumed, report_at=ago(500), resumed_at=ago(500))
    assert verdict_of([*ranks, old], progress=400).verdicts[7] == "silent"


def test_a_stall_reported_before_the_jobs_last_progress_is_over():
    ranks = [waiting(r, report_at=ago(200)) for r in range(8)]
    v = verdict_of(ranks, progress=100)  # the job stepped after every report
    assert set(v.verdicts.values()) == {"running"} and v.stalled == 0 and not v.due


def test_all_waiting_alike_is_no_minority():
    v = verdict_of([waiting(r) for r in range(8)])
    assert not v.minority and v.culprits == () and v.counts["waiting"] == 8
    assert v.sentence == "no minority: all 8 ranks wait in `all_reduce` at step 120"


def test_too_many_differing_is_no_minority():
    ranks = [waiting(r) for r in range(8)]
    for r in (1, 2, 3):
        ranks[r] = waiting(r, frame=LOADER, in_collective=False)
    v = verdict_of(ranks)
    assert v.counts["outside"] == 3 and not v.minority and v.culprits == ()
    assert v.culprit_nodes == ()
    assert v.sentence == (
        "no minority: 3 of 8 ranks differ (3 outside); 5 ranks wait in `all_reduce` at step 120"
    )


def test_the_minority_bound_is_max_one_and_ten_percent():
    eight = [waiting(r) for r in range(8)]
    one = [*eight[:7], waiting(7, last_step=100)]
    assert verdict_of(one).minority  # 1 of 8 ≤ max(1, 0.8)
    two = [*eight[:6], waiting(6, last_step=100), waiting(7, last_step=100)]
    assert not verdict_of(two).minority  # 2 of 8 > max(1, 0.8)
    twenty = [waiting(r) for r in range(18)] + [waiting(18, last_step=1), waiting(19, frame=LOADER)]
    v = verdict_of(twenty)
    assert v.minority and v.culprits == (18, 19)  # 2 of 20 ≤ 10%
    assert v.culprit_nodes == ("gpu002",)


def test_due_when_at_least_half_the_ranks_report_a_stall():
    half = [waiting(r) for r in range(4)] + [silent_view(r) for r in range(4, 8)]
    assert verdict_of(half, progress=100).due
    fewer = [waiting(r) for r in range(3)] + [silent_view(r) for r in range(3, 8)]
    v = verdict_of(fewer, progress=100)
    assert not v.due and v.stalled == 3


def test_stalled_since_and_first_report_are_the_earliest_active_ones():
    ranks = [waiting(r) for r in range(8)]
    ranks[6] = waiting(6, stalled_since=ago(200), first_report_at=ago(140))
    v = verdict_of(ranks)
    assert v.stalled_since == ago(200) and v.first_report_at == ago(140)


def test_the_sentence_names_the_culprit_and_where_the_others_wait():
    ranks = [
        waiting(r, node=f"gpu-b{r // 8:02d}", last_step=41_217, frame=TRAIN) for r in range(1024)
    ]
    ranks[13] = waiting(
        13, node="gpu-a042", last_step=41_216, frame=LOADER, in_collective=False, collective=""
    )
    v = verdict_of(ranks)
    assert v.culprits == (13,) and v.verdicts[13] == "outside"
    # The sentence docs/checks.md gives, its numbers' thousands apart by a narrow no-break
    # space (one format throughout, never wrapped inside a number: issue 42).
    assert v.sentence == (
        "rank 13 on gpu-a042 last stepped at 41\u202f216 and is in `DataLoader.__next__`; "
        "1\u202f023 ranks wait in `all_reduce` at step 41\u202f217"
    )


def test_the_sentence_for_a_silent_rank():
    ranks = [waiting(r, node=f"gpu-a{r:02d}", last_step=99) for r in range(8)]
    ranks[5] = RankView(rank=5, node="gpu-b07")
    v = verdict_of(ranks, progress=180)
    assert v.sentence == (
        "rank 5 on gpu-b07 went silent (no report, no step for 180 s); "
        "7 ranks wait in `all_reduce` at step 99"
    )


def test_no_ranks():
    v = verdict_of([])
    assert v.registered == 0 and not v.due and not v.minority
    assert v.sentence == "no ranks registered"


@pytest.mark.parametrize(
    ("times", "window"),
    [
        ([], 60.0),
        ([10.0] * 50, 60.0),  # 5 × 10 < 60
        ([30.0] * 60, 150.0),
        ([1_000.0] * 10 + [20.0] * 50, 100.0),  # the last 50 only
        ([math.nan, math.inf, 40.0, None], 200.0),  # finite values only
    ],
)
def test_stall_window(times, window):
    assert stall_window(times) == window


# --- Stacks -----------------------------------------------------------------------------

LIB = "/usr/lib/python3.11/site-packages"
STACK = (
    Frame("/home/u/train.py", "main", 200),
    Frame("/home/u/train.py", "train_step", 88),
    Frame(f"{LIB}/torch/distributed/c10d_logger.py", "wrapper", 79),
    Frame(f"{LIB}/torch/distributed/distributed_c10d.py", "all_reduce", 2501),
)


def test_the_frame_is_the_innermost_training_code_frame():
    assert training_frame(STACK) == "train_step (/home/u/train.py:88)"
    agent = (*STACK[:2], Frame("/opt/kuae_agent/reporter.py", "step", 10))
    assert training_frame(agent) == "train_step (/home/u/train.py:88)"
    frozen = (Frame("<frozen importlib._bootstrap>", "_load", 1),)
    assert training_frame(frozen) == "_load (<frozen importlib._bootstrap>:1)"  # nothing else
    assert training_frame(()) == ""
    assert is_library("/usr/lib/python3.12/threading.py")
    assert is_library("/x/dist-packages/y.py") and not is_library("/home/u/train.py")


def test_the_collective_is_the_torch_distributed_function_on_the_stack():
    assert collective_of(STACK) == "all_reduce"
    barrier = (*STACK[:2], Frame(f"{LIB}/torch/distributed/distributed_c10d.py", "barrier", 9))
    assert collective_of(barrier) == "barrier"
    base = (Frame(f"{LIB}/torch/distributed/distributed_c10d.py", "_all_gather_base", 9),)
    assert collective_of(base) == "all_gather_base"
    assert collective_of(STACK[:2]) == ""
    mine = (Frame("/home/u/train.py", "all_reduce", 3),)  # not torch.distributed's
    assert collective_of(mine) == ""


def test_the_digest_is_sha256_of_the_canonical_json():
    frames = [{"file": f.file, "function": f.function, "line": f.line} for f in STACK]
    canonical = json.dumps(frames, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    stack = stack_of(STACK)
    assert stack.digest == hashlib.sha256(canonical.encode()).hexdigest()
    assert stack.as_json() == frames and stack.collective == "all_reduce"
    assert stack_of(STACK[:3]).digest != stack.digest
