"""Ranking a job's nodes by evidence (pure)."""

from __future__ import annotations

import datetime as dt

from apps.health.localise import NodeEvidence, rank

NOW = dt.datetime(2026, 11, 23, 12, 0, tzinfo=dt.UTC)


def test_the_node_a_hang_waits_on_comes_first():
    nodes = [NodeEvidence(f"n{i}", "healthy", NOW, 8.0) for i in range(6)]
    nodes.append(NodeEvidence("culprit", "healthy", NOW - dt.timedelta(seconds=40), 8.0))
    ranked = rank(nodes, step_time_s=10)
    assert [s.hostname for s in ranked] == ["culprit"]
    assert "behind the other nodes" in ranked[0].reasons[0]


def test_evidence_adds_up_and_orders():
    nodes = [
        NodeEvidence("ok", "healthy", NOW, 8.0),
        NodeEvidence("ok2", "healthy", NOW, 8.1),
        NodeEvidence("slow", "suspect", NOW, 9.6, failing=(), warning=("slow_node",)),
        NodeEvidence("xid", "drained", NOW, 8.0, gpu_errors=1, failing=("gpu_errors",)),
    ]
    ranked = rank(nodes, step_time_s=10)
    assert [s.hostname for s in ranked] == ["xid", "slow"]
    assert ranked[1].reasons == [
        "computes 1.19× the job median",
        "warning slow_node",
        "state suspect",
    ]


def test_no_evidence_no_suspects():
    assert (
        rank(
            [NodeEvidence("a", "healthy", NOW, 1.0), NodeEvidence("b", "healthy")], step_time_s=None
        )
        == []
    )
