"""The detection-quality bench on a few seeds, as a regression guard: every injected fault
found, nothing else flagged, one incident per fault (`tests.bench.detection`)."""

from __future__ import annotations

import datetime as dt

import pytest

from apps.health.checks import SCHEDULED_KINDS
from apps.simulator.host import HOST_FAULTS
from tests.bench.detection import run_seed
from tests.bench.detection_script import script_for
from tests.bench.detection_sim import WIDE_SCENARIOS

SEEDS = (0, 1)


def test_the_seeds_cover_every_kind_and_every_fault() -> None:
    end = dt.datetime(2026, 11, 30, 12, tzinfo=dt.UTC)
    scripts = [script_for(seed, end) for seed in SEEDS]
    # Every scheduled check, host checks included: a new check fails here until it has one.
    assert {f.kind for s in scripts for f in s.faults} == set(SCHEDULED_KINDS)
    # Every host fault of the simulator's table, where its row says it is found.
    host_faults = {(f.kind, f.status, f.label) for s in scripts for f in s.faults if f.target}
    assert host_faults >= {(h.check, h.result, h.words.split(":")[0]) for h in HOST_FAULTS}
    scenarios = {job.scenario for s in scripts for job in s.jobs}
    assert scenarios >= {*WIDE_SCENARIOS, "node_only", "hang_node_only", "starting"} - {"healthy"}
    assert {f.label for s in scripts for f in s.faults} >= {
        "hang, job-wide reporter",
        "hang, per-node-only reporter",
        "hang, same step re-reported",
        "hang, no step since it started",
        "straggler 1.12–1.40× compute",
        "slow GEMM (≤ 0.85× median)",
        "checksum flip",
        "non-finite loss or grad norm",
        "fatal XID on the gauge",
        "XID storm, 30 kernel-log lines",
        "application XID (warn, no incident)",
        "vanished GPU (missing two runs)",
        "silent node (> 180 s)",
        "hot for two runs",
        "NVLink CRC growth > 100",
        "NIC link down (DOWN, link_downed +1)",
        "NIC port silent two runs, node reporting",
        "flapping link (> 5 recoveries/min)",
        "flapping link, 3 warnings within an hour",
        "symbol errors > 10/s",
        "bad leaf switch (its ports DOWN on ≥ 3 nodes)",
        "clock offset beyond ±0.5 s",
    }
    assert {d.label for s in scripts for d in s.decoys} >= {
        "progress just under the hang limit",
        "healthy per-node-only reporter",
        "started < 1,800 s ago, no step yet",
        "node at 1.08× its job's median compute",
        "GEMM at 0.91× median",
        "GPU at 89 °C",
        "HBM at 94 °C",
        "one 91 °C spike",
        "NVLink CRC growth of exactly 100",
        "node silent for 170 s",
        "agent down, ranks still reporting",
        "GPU missing for one run",
        "NIC counters reset to 0",
        "a single symbol error",
        "link error recoveries at exactly 5/min",
        "NIC port missing for one run",
        "port DOWN on a node already drained",
        "90 correctable memory errors within an hour",
        "90 AER correctable errors within an hour",
        "an idle GPU's link at 2.5 GT/s, x16",
        "clock not synchronised for one run",
        "clock offset 0.4–0.49 s",
        "/scratch at 5.5–7% free",
        "out-of-memory counter reset (a reboot)",
    }
    # Both intake paths carry ports: the agents' `ports`, naming their leaf switch, and
    # node_exporter's text; a bad leaf's ports name one switch.
    ticks = [t for s in scripts for t in s.ticks]
    assert any(p.get("switch") for t in ticks for p in t.ports)
    assert any("node_infiniband_state_id" in text for t in ticks for text in t.node_text.values())
    # … and host readings: the agents' `host` (PCIe among them), node_exporter's series.
    assert {r["kind"] for t in ticks for r in t.host} == {"memory", "filesystem", "pcie", "clock",
                                                          "vmstat"}  # fmt: skip
    assert any("node_timex_sync_status" in text for t in ticks for text in t.node_text.values())
    for s in scripts:
        leaf = {f.component for f in s.faults if f.component}
        assert len(leaf) == 1 and len({f.node for f in s.faults if f.component}) >= 3
    assert script_for(1, end).faults == scripts[1].faults  # seeded: the same every time


@pytest.mark.django_db
@pytest.mark.parametrize("seed", SEEDS)
def test_every_fault_found_nothing_else_flagged_one_incident_each(seed: int) -> None:
    outcome = run_seed(seed)
    assert outcome.errors == []
    assert outcome.misses == [], "\n".join(outcome.misses)
    assert outcome.false_alarms == [], "\n".join(outcome.false_alarms)
    for kind, tally in outcome.tallies.items():
        assert (tally.fp, tally.fn) == (0, 0), kind
        assert tally.tp == tally.injected
    assert outcome.duplicates == 0
