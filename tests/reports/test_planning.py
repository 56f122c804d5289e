"""Young/Daly advice and the what-if projection against hand-computed numbers."""

from __future__ import annotations

import math

import pytest

from apps.reports.planning import checkpoint_advice, optimal_interval_s, waste_share, what_if


def test_young_daly_interval_minimises_waste():
    cost, mtbf = 60.0, 10 * 3600.0
    best = optimal_interval_s(cost, mtbf)
    assert best == pytest.approx(math.sqrt(2 * 60 * 36000))  # ≈ 2078 s
    assert waste_share(best, cost, mtbf) < waste_share(best * 0.8, cost, mtbf)
    assert waste_share(best, cost, mtbf) < waste_share(best * 1.2, cost, mtbf)
    assert waste_share(best, cost, mtbf) == pytest.approx(math.sqrt(2 * cost / mtbf))


def test_advice_for_a_job_saving_too_often():
    saves = [(i * 600.0, 60.0) for i in range(20)]  # every 10 min, 60 s each
    advice = checkpoint_advice(gpu_count=1024, saves=saves, mtbf_hours=10, mtbf_source="job")
    assert advice is not None
    assert advice.current_interval_s == 600 and advice.cost_s == 60
    assert advice.optimal_interval_s == pytest.approx(math.sqrt(2 * 60 * 36000))
    now = 60 / 600 + 600 / 72000
    best = math.sqrt(2 * 60 / 36000)
    assert advice.gpu_hours_saved_per_week == pytest.approx(1024 * 168 * (now - best))
    assert checkpoint_advice(gpu_count=8, saves=saves[:1], mtbf_hours=10, mtbf_source="job") is None


def test_what_if_a_bigger_job():
    p = what_if(
        gpus=16384,
        gpus_per_node=8,
        node_mtbf_hours=2048 * 100,
        mttr_minutes=30,
        checkpoint_cost_s=60,
    )
    assert p.nodes == 2048 and p.job_mttf_hours == pytest.approx(100)
    assert p.interruptions_per_week == pytest.approx(1.68)
    m = 100 * 3600
    assert p.expected_effective_rate == pytest.approx(1 - math.sqrt(2 * 60 / m) - 1800 / m)
    assert p.beyond == "" and p.uptime_share == pytest.approx(m / (m + 1800))
    tiny = what_if(
        gpus=8, gpus_per_node=8, node_mtbf_hours=0.01, mttr_minutes=60, checkpoint_cost_s=600
    )
    assert tiny.expected_effective_rate is None and tiny.beyond


def test_what_if_beyond_its_range_says_so_not_zero():
    """16,384 GPUs where a repair (90 min) outlasts the job's MTTF (1 h): the first-order
    rate would read 0.00% ("no progress"); uptime alone is 40%, so the model says it has
    left its range and gives that bound instead (issue 42)."""
    p = what_if(
        gpus=16384, gpus_per_node=8, node_mtbf_hours=2048, mttr_minutes=90, checkpoint_cost_s=60
    )
    assert p.job_mttf_hours == pytest.approx(1.0)
    assert p.expected_effective_rate is None
    assert "repair takes longer" in p.beyond
    assert p.uptime_share == pytest.approx(0.4)
    interval = what_if(  # the checkpoint interval past the MTTF: also beyond
        gpus=8, gpus_per_node=8, node_mtbf_hours=0.05, mttr_minutes=0, checkpoint_cost_s=600
    )
    assert interval.expected_effective_rate is None and "checkpoint interval" in interval.beyond
