"""Slurm node records of every version parse to the same facts (apps/scheduler/slurm_nodes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apps.scheduler.slurm_nodes import SlurmFormatError, parse_nodes

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm"


def test_real_22_05_sinfo_with_a_drained_node() -> None:
    nodes = {
        n.name: n for n in parse_nodes(json.loads((DATA / "sinfo-22.05-drain.json").read_text()))
    }
    drained, idle = nodes["rcgpu01"], nodes["rcgpu02"]
    assert drained.states == ("IDLE", "DRAIN")
    assert drained.label == "idle+drain"
    assert drained.kuae_state == "drained"
    assert drained.reason.startswith("kuae: gpu_errors XID 79")
    assert drained.gpus == 8
    assert idle.kuae_state is None and idle.reason == ""


def test_25x_node_records_state_lists_and_wrapped_numbers() -> None:
    payload = {
        "nodes": [
            {
                "name": "gpu7",
                "state": ["DOWN", "DRAIN", "NOT_RESPONDING"],
                "reason": "Not responding",
                "reason_set_by_user": "slurm",
                "reason_changed_at": {"set": True, "infinite": False, "number": 1764000000},
                "gres": "gpu:h100:8(S:0-1)",
            },
            {"name": "gpu8", "state": ["MIXED"], "reason": "", "gres": "gpu:h100:8"},
        ]
    }
    down, busy = parse_nodes(payload)
    assert down.kuae_state == "down"  # DOWN wins over DRAIN
    assert down.reason_by == "slurm" and down.reason_at is not None
    assert down.gpus == 8
    assert busy.kuae_state is None


def test_sinfo_N_json_of_24_11_one_entry_per_node() -> None:
    payload = {
        "sinfo": [
            {
                "node": {"state": ["IDLE", "DRAIN"]},
                "nodes": {"nodes": ["gpu9"], "total": 1},
                "gres": {"total": "tmpsize:7T,gpu:l40s:4(S:0-1)", "used": ""},
                "reason": {"description": "bad fan", "user": "alice", "time": 1764000000},
            }
        ]
    }
    (node,) = parse_nodes(payload)
    assert (node.name, node.kuae_state, node.reason, node.reason_by, node.gpus) == (
        "gpu9",
        "drained",
        "bad fan",
        "alice",
        4,
    )


def test_22_05_down_star_is_down() -> None:
    (node,) = parse_nodes({"nodes": [{"name": "n1", "state": "down*", "state_flags": []}]})
    assert node.states == ("DOWN",) and node.kuae_state == "down"


@pytest.mark.parametrize("payload", [[], {"jobs": []}, {"nodes": "x"}, None])
def test_not_a_node_listing(payload: object) -> None:
    with pytest.raises(SlurmFormatError):
        parse_nodes(payload)
