"""The `storage` detector on plain values (docs/checks.md, `storage`): a required mount
missing, read-only or with a device error fails and names its device; one short of free
space warns; a healthy one passes; its target is `mount:HOST:/checkpoints`."""

from __future__ import annotations

import datetime as dt

import pytest

from apps.health.checks import Limits
from apps.health.detectors.findings import target_part
from apps.health.detectors.storage import Mount, NodeFilesystems, mount_target, storage
from apps.incidents.choices import Category, Severity

T = dt.datetime(2026, 11, 23, 8, tzinfo=dt.UTC)
TIB = 2**40
HEALTHY = {
    "device": "nas01:/export/ckpt",
    "fstype": "nfs4",
    "readonly": 0,
    "size_bytes": 100 * TIB,
    "avail_bytes": 40 * TIB,
    "device_error": 0,
}


def node(host: str, at: dt.datetime = T, **mounts: dict[str, object]) -> NodeFilesystems:
    """A node whose newest report (at `at`) holds `/` and each of `mounts` (name: values
    changed from HEALTHY; `stale=…` a reading older than the report)."""
    points = {"/": Mount(at, {"device": "/dev/sda1", "fstype": "ext4", "readonly": 0})}
    for name, changed in mounts.items():
        values = {**HEALTHY, **changed}
        ts = values.pop("stale", at)
        points[f"/{name}"] = Mount(ts, values)  # type: ignore[arg-type]
    return NodeFilesystems(host, at, points)


def judge(*nodes: NodeFilesystems, required=("/checkpoints",), pct: float = 5.0):  # noqa: ANN001, ANN201
    return storage(list(nodes), required=list(required), limits=Limits(storage_min_free_pct=pct))


def test_each_failure_and_the_warning():
    found = judge(
        node("h0", checkpoints={}),
        node("h1", checkpoints={"readonly": 1}),
        node("h2", checkpoints={"device_error": 1}),
        node("h3"),  # not mounted at all
        node("h4", checkpoints={"stale": T - dt.timedelta(minutes=5)}),  # gone since
        node("h5", checkpoints={"avail_bytes": 4 * TIB}),
        node("h6", checkpoints={"avail_bytes": 5 * TIB}),  # exactly 5%: passes
    )
    by = {f.node: f for f in found}
    assert [f.target for f in found] == [f"mount:h{i}:/checkpoints" for i in range(7)]
    passing = (by["h0"].status, by["h0"].message)
    assert passing == ("pass", "/checkpoints writable, at least 5% free")
    assert by["h1"].status == "fail" and "read-only" in by["h1"].message
    assert by["h2"].status == "fail" and "device error" in by["h2"].message
    assert by["h3"].status == "fail" and "not mounted" in by["h3"].message
    assert by["h4"].status == "fail" and "not mounted" in by["h4"].message
    for host in ("h1", "h2", "h3", "h4"):
        f = by[host]
        assert (f.category, f.severity, f.interrupts_job) == (Category.STORAGE, Severity.SEV2, True)
        assert f.node_state == "drained"
    # a failing mount names its device and how many nodes report it (blast radius)
    assert by["h1"].component == "storage:nas01:/export/ckpt" and by["h1"].component_size == 6
    assert by["h4"].component == "storage:nas01:/export/ckpt"  # its last known device
    assert by["h3"].component == "" and by["h3"].component_size == 0  # never seen: none
    assert by["h5"].status == "warn" and "4.0% < 5%" in by["h5"].message
    assert (by["h5"].category, by["h5"].severity, by["h5"].node_state) == (
        Category.STORAGE,
        Severity.SEV3,
        None,
    )
    assert by["h6"].status == "pass"
    assert judge(node("h5", checkpoints={"avail_bytes": 4 * TIB}), pct=3.0)[0].status == "pass"


def test_only_required_mounts_are_judged_and_unknown_space_is_said():
    found = judge(node("h0", checkpoints={}, scratch={"readonly": 1}), required=["/checkpoints"])
    assert len(found) == 1 and found[0].status == "pass"
    found = judge(node("h0", checkpoints={"size_bytes": None, "avail_bytes": None}))
    assert found[0].status == "pass" and "not reported, not checked" in found[0].message
    assert judge(node("h0"), required=[]) == []


def test_the_mount_target_owns_its_prefix_parsing_and_words():
    assert mount_target("h01", "/checkpoints") == "mount:h01:/checkpoints"
    assert target_part("mount:h01:/data/ckpt") == ("h01", "mount /data/ckpt")
    assert target_part("gpu:h01/3") == ("h01", "GPU 3")
    assert target_part("node:h01") is None
    with pytest.raises(ValueError, match="no target type 'disk'"):
        target_part("disk:h01/sda")
