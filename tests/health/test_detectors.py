"""The detectors of docs/checks.md, without a database: conditions, edges, no false positives."""

from __future__ import annotations

import datetime as dt
import math

from apps.health import detectors as d
from apps.health.checks import Limits

NOW = dt.datetime(2026, 11, 23, 12, 0, tzinfo=dt.UTC)
L = Limits()


def ago(seconds: float) -> dt.datetime:
    return NOW - dt.timedelta(seconds=seconds)


def by_target(findings: list[d.Finding]) -> dict[str, d.Finding]:
    return {f.target: f for f in findings}


def test_heartbeat_fails_silent_nodes_and_skips_the_rest():
    nodes = [d.NodeSeen(f"n{i}", "healthy", ago(10)) for i in range(20)] + [
        d.NodeSeen("quiet", "healthy", ago(200)),
        d.NodeSeen("drained", "drained", ago(9999)),
        d.NodeSeen("maint", "maintenance", ago(9999)),
        d.NodeSeen("never", "healthy", None),
        d.NodeSeen("down-still", "down", ago(9999)),
        d.NodeSeen("down-back", "down", ago(5)),
    ]
    out = by_target(d.heartbeat(nodes, now=NOW, limits=L, cluster="c"))
    quiet = out["node:quiet"]
    assert (
        quiet.status == "fail"
        and quiet.node_state == "down"
        and quiet.category == "node_unreachable"
    )
    assert quiet.occurred_at == ago(200) and quiet.interrupts_job
    assert out["node:n3"].status == "pass" and out["node:down-back"].status == "pass"
    for skipped in ("drained", "maint", "never", "down-still"):
        assert f"node:{skipped}" not in out
    assert sum(f.status == "fail" for f in out.values()) == 1


def test_heartbeat_at_the_limit_is_not_silent():
    out = d.heartbeat([d.NodeSeen("a", "healthy", ago(180))], now=NOW, limits=L, cluster="c")
    assert out[0].status == "pass"


def test_many_silent_nodes_is_the_monitoring_path():
    nodes = [d.NodeSeen(f"n{i}", "healthy", ago(10)) for i in range(8)]
    nodes += [d.NodeSeen(f"s{i}", "healthy", ago(400)) for i in range(2)]  # 20% > 10%
    out = d.heartbeat(nodes, now=NOW, limits=L, cluster="kuae")
    fails = [f for f in out if f.status == "fail"]
    assert len(fails) == 1 and fails[0].target == "cluster:kuae" and fails[0].node_state is None
    assert fails[0].details["silent_nodes"] == ["s0", "s1"]


def test_job_hang():
    jobs = [
        d.JobProgress(1, "steady", ago(86400), ago(30), 900, [10.0] * 50),
        d.JobProgress(2, "stuck", ago(86400), ago(700), 900, [10.0] * 50),  # > max(600, 100)
        d.JobProgress(3, "slow-steps", ago(86400), ago(700), 9, [100.0] * 50),  # limit 1,000 s
        d.JobProgress(4, "just-started", ago(300), None),
        d.JobProgress(5, "never-reported", ago(2000), None),
        d.JobProgress(6, "nan-steps", ago(86400), ago(650), 7, [math.nan, math.inf, 10.0]),
        d.JobProgress(7, "few-samples", ago(3600), ago(500), 3, [60.0]),  # limit 600
        # Requeued 5 minutes ago: its progress is the earlier attempt's, this one has time.
        d.JobProgress(8, "requeued", ago(300), ago(4000), 500, [10.0] * 50),
        d.JobProgress(9, "requeued-stuck", ago(1900), ago(4000), 500, [10.0] * 50),
    ]
    out = by_target(d.job_hang(jobs, now=NOW, limits=L))
    assert {t: f.status for t, f in out.items()} == {
        "job:1": "pass",
        "job:2": "fail",
        "job:3": "pass",
        "job:4": "pass",
        "job:5": "fail",
        "job:6": "fail",
        "job:7": "pass",
        "job:8": "pass",
        "job:9": "fail",
    }
    assert out["job:2"].occurred_at == ago(700) and out["job:2"].category == "hang"
    assert out["job:2"].severity == "sev1" and out["job:2"].interrupts_job
    assert "step 900" in out["job:2"].message
    assert out["job:5"].occurred_at == ago(2000) and out["job:9"].occurred_at == ago(1900)


def test_job_hang_limit_edges():
    at_limit = d.JobProgress(1, "edge", ago(86400), ago(600), 5, [1.0] * 50)
    assert d.job_hang([at_limit], now=NOW, limits=L)[0].status == "pass"
    past = d.JobProgress(1, "edge", ago(86400), ago(601), 5, [1.0] * 50)
    assert d.job_hang([past], now=NOW, limits=L)[0].status == "fail"
    # The median of the newest 50 only: old slow steps do not stretch the limit.
    mixed = d.JobProgress(1, "m", ago(86400), ago(900), 5, [500.0] * 100 + [10.0] * 50)
    assert d.job_hang([mixed], now=NOW, limits=L)[0].status == "fail"


def test_slow_node_by_compute_time():
    per_node = {f"n{i}": [1.0, 1.01, 0.99, 1.0, 1.0] for i in range(6)}
    per_node["straggler"] = [1.2] * 20
    per_node["few"] = [5.0] * 4  # fewer than 5 samples: not judged
    per_node["n0"] = [1.0, 1.0, 1.0, math.nan, math.inf, 1.0, 1.0]  # non-finite ignored
    out = by_target(d.slow_node({7: per_node}, [], limits=L))
    assert out["node:straggler"].status == "warn" and out["node:straggler"].node_state == "suspect"
    assert out["node:straggler"].details["ratio"] > 1.1
    assert "node:few" not in out
    assert all(f.status == "pass" for t, f in out.items() if t != "node:straggler")


def test_slow_node_needs_four_nodes():
    per_node = {"a": [1.0] * 5, "b": [1.0] * 5, "c": [3.0] * 5}
    assert d.slow_node({1: per_node}, [], limits=L) == []


def test_slow_gpu_by_gemm():
    gpus = [d.GpuLatest("n1", i, "H100", {"gemm_tflops": 720.0}, NOW) for i in range(7)]
    gpus.append(d.GpuLatest("n1", 7, "H100", {"gemm_tflops": 600.0}, NOW))
    gpus.append(d.GpuLatest("n2", 0, "A100", {"gemm_tflops": 250.0}, NOW))  # other model
    gpus.append(d.GpuLatest("n2", 1, "A100", {"gemm_tflops": math.nan}, NOW))
    out = by_target(d.slow_node({}, gpus, limits=L))
    assert out["gpu:n1/7"].status == "warn" and out["gpu:n2/0"].status == "pass"
    assert "gpu:n2/1" not in out


def test_sdc_non_finite_loss_and_checksums():
    bad = [d.NonFinite(3, ago(40), 1200, "loss=NaN"), d.NonFinite(3, ago(20), 1201, "loss=NaN")]
    gpus = [
        d.GpuLatest(f"n{i}", 0, "H100", {"gemm_checksum": 1834.25}, NOW, ago(60)) for i in range(5)
    ]
    gpus.append(d.GpuLatest("bad", 0, "H100", {"gemm_checksum": 1834.5}, NOW, ago(30)))
    gpus.append(d.GpuLatest("stale", 0, "H100", {"gemm_checksum": 99.0}, NOW, ago(3600)))
    out = by_target(d.sdc(bad, {3: "llama", 4: "fine"}, gpus, limits=L))
    assert out["job:3"].status == "fail" and out["job:3"].occurred_at == ago(40)
    assert out["job:4"].status == "pass"
    assert out["gpu:bad/0"].status == "fail" and out["gpu:bad/0"].node_state == "suspect"
    assert "gpu:stale/0" not in out  # outside the probe round
    assert out["gpu:n1/0"].status == "pass"


def test_sdc_without_a_majority_says_nothing():
    gpus = [
        d.GpuLatest("a", 0, "H100", {"gemm_checksum": 1.0}, NOW, NOW),
        d.GpuLatest("b", 0, "H100", {"gemm_checksum": 2.0}, NOW, NOW),
    ]
    assert d.sdc([], {}, gpus, limits=L) == []


def test_gpu_errors():
    gpus = [d.GpuLatest("n1", i, "H100", {}, NOW) for i in range(4)]
    events = [
        d.GpuEvent("n1", 0, ago(30), "xid", 79),
        d.GpuEvent("n1", 1, ago(30), "ecc_dbe", 2),
        d.GpuEvent("n1", 2, ago(30), "xid", 13),
        d.GpuEvent("n1", 3, ago(30), "counter_reset", 0),
        d.GpuEvent("n1", 3, ago(20), "ecc_sbe", 4),
    ]
    out = by_target(d.gpu_errors(events, gpus, limits=L))
    assert (out["gpu:n1/0"].status, out["gpu:n1/0"].category) == ("fail", "gpu")
    assert (out["gpu:n1/1"].status, out["gpu:n1/1"].category) == ("fail", "gpu_hbm")
    assert out["gpu:n1/1"].node_state == "drained" and out["gpu:n1/1"].interrupts_job
    assert (out["gpu:n1/2"].status, out["gpu:n1/2"].category) == ("warn", None)
    assert out["gpu:n1/3"].status == "pass"  # a reset and single-bit growth are not errors


def test_gpu_errors_is_blind_where_the_exporter_cannot_report_ecc():
    """docs/checks.md, Blind results: `error`, never a pass, and nothing it causes."""
    gpus = [
        d.GpuLatest("g1", 0, "HL-325L", {}, NOW, source="gaudi"),
        d.GpuLatest("g1", 1, "HL-325L", {}, NOW, source="gaudi"),
        d.GpuLatest("m1", 0, "MI300X", {}, NOW, source="amd"),
        d.GpuLatest("n1", 0, "H100", {}, NOW),  # posted JSON: its sender may report anything
    ]
    events = [d.GpuEvent("g1", 1, ago(30), "pcie_replay", 500, 0)]
    out = by_target(d.gpu_errors(events, gpus, limits=L))
    blind = out["gpu:g1/0"]
    assert blind.status == "error" and blind.category is None and blind.node_state is None
    assert blind.message == (
        "not checked: ECC not reported by Intel Gaudi metric exporter (nor link errors)"
    )
    assert blind.details["not_reported"] == ["ecc_dbe_total", "nvlink_crc_errors"]
    assert out["gpu:g1/1"].status == "warn"  # what it can see still counts
    assert out["gpu:m1/0"].status == "pass" and out["gpu:n1/0"].status == "pass"


def test_xid_storm_is_one_finding_with_its_count():
    events = [d.GpuEvent("n1", 0, ago(60 - i), "xid", 79) for i in range(40)]
    events.append(d.GpuEvent("n1", 0, ago(5), "xid", 13))
    out = by_target(d.gpu_errors(events, [], limits=L))
    assert list(out) == ["gpu:n1/0"] and out["gpu:n1/0"].status == "fail"
    assert out["gpu:n1/0"].details["xid_counts"] == {"13": 1, "79": 40}


def test_xids_by_nvidias_catalogue():
    codes = {0: 79, 1: 48, 2: 119, 3: 74, 4: 94, 5: 13, 6: 43}
    events = [d.GpuEvent("n1", gpu, ago(5), "xid", code) for gpu, code in codes.items()]
    out = by_target(d.gpu_errors(events, [], limits=L))
    verdict = {gpu: (out[f"gpu:n1/{gpu}"].status, out[f"gpu:n1/{gpu}"].category) for gpu in codes}
    assert verdict == {
        0: ("fail", "gpu"),  # fallen off the bus: reboot the node
        1: ("fail", "gpu_hbm"),  # double-bit ECC
        2: ("fail", "gpu_system_processor"),  # GSP RPC timeout: reset the GPU
        3: ("fail", "gpu"),  # NVLink error
        4: ("warn", None),  # contained memory error: restart the application
        5: ("warn", None),  # graphics engine exception
        6: ("warn", None),  # GPU stopped processing: nothing to do
    }
    assert out["gpu:n1/0"].node_state == "drained" and out["gpu:n1/0"].interrupts_job
    assert "fallen off the bus" in out["gpu:n1/0"].message


def test_a_kernel_xid_on_a_gpu_known_only_by_its_address():
    events = [d.GpuEvent("n1", None, ago(5), "xid", 79, pci_bus="0000:17:00.0")]
    nodes = [d.NodeGpus("n1", 8, 8)]
    out = by_target(d.gpu_errors(events, [], limits=L, nodes=nodes))
    assert out["gpu:n1/0000:17:00.0"].status == "fail" and out["node:n1"].status == "pass"


def test_unknown_xid_warns_and_says_so():
    (found,) = d.gpu_errors([d.GpuEvent("n1", 0, ago(5), "xid", 9999)], [], limits=L)
    assert found.status == "warn" and found.category is None and "unknown" in found.message


def test_row_remap_failure_and_link_counters():
    gpus = [
        d.GpuLatest("n1", 0, "H100", {"row_remap_failure": 1}, NOW),
        d.GpuLatest("n1", 1, "H100", {"row_remap_failure": 0}, NOW),
    ]
    events = [
        d.GpuEvent("n1", 1, ago(50), "nvlink_crc", 150, 100),
        d.GpuEvent("n1", 1, ago(20), "nvlink_crc", 201, 150),  # 101 since the last run
        d.GpuEvent("n1", 2, ago(20), "pcie_replay", 100, 0),  # exactly 100: not more
    ]
    out = by_target(d.gpu_errors(events, gpus, limits=L))
    assert (out["gpu:n1/0"].status, out["gpu:n1/0"].category) == ("fail", "gpu_hbm")
    assert (out["gpu:n1/1"].status, out["gpu:n1/1"].category) == ("warn", "gpu")
    assert out["gpu:n1/1"].node_state == "suspect" and out["gpu:n1/1"].severity == "sev3"
    assert "gpu:n1/2" not in out


def test_link_growth_across_a_counter_reset_counts_only_what_grew():
    # A driver reload zeroes the counter between two small growths: 70 new errors, not the
    # 1,040 between the lowest and the highest value seen.
    events = [
        d.GpuEvent("n1", 0, ago(50), "nvlink_crc", 1040, 1000),
        d.GpuEvent("n1", 0, ago(40), "counter_reset", 0, 1040),
        d.GpuEvent("n1", 0, ago(30), "nvlink_crc", 30, 0),
        d.GpuEvent("n1", 1, ago(50), "pcie_replay", 900, 880),
        d.GpuEvent("n1", 1, ago(40), "counter_reset", 0, 900),
        d.GpuEvent("n1", 1, ago(30), "pcie_replay", 81, 0),  # 20 + 81 = 101: more than 100
    ]
    out = by_target(d.gpu_errors(events, [], limits=L))
    assert "gpu:n1/0" not in out
    assert out["gpu:n1/1"].status == "warn" and out["gpu:n1/1"].details["grew"] == 101


def test_a_gpu_that_stops_reporting_fails_on_the_second_run():
    nodes = [d.NodeGpus("a", 8, 7), d.NodeGpus("b", 8, 8), d.NodeGpus("silent", 8, 0)]
    first = by_target(d.gpu_errors([], [], limits=L, nodes=nodes))
    assert {t: f.status for t, f in first.items()} == {
        "node:a": "pass",
        "node:b": "pass",
        "node:silent": "pass",  # a silent node is the heartbeat check's
    }
    assert first["node:a"].details["missing_runs"] == 1
    second = by_target(d.gpu_errors([], [], limits=L, nodes=nodes, missing_runs={"node:a": 1}))
    assert second["node:a"].status == "fail" and second["node:a"].node_state == "drained"
    assert second["node:a"].category == "gpu" and "1 of 8 GPUs stopped" in second["node:a"].message
    back = d.gpu_errors([], [], limits=L, nodes=[d.NodeGpus("a", 8, 8)], missing_runs={"node:a": 3})
    assert back[0].status == "pass" and back[0].details["missing_runs"] == 0


def test_thermal_needs_two_consecutive_hot_runs_on_fresh_values():
    gpus = [
        d.GpuLatest("n1", 0, "H100", {"temp_c": 90, "mem_temp_c": 70}, ago(10)),
        d.GpuLatest("n1", 1, "H100", {"temp_c": 60, "mem_temp_c": 95}, ago(10)),
        d.GpuLatest("n1", 2, "H100", {"temp_c": 89.9, "mem_temp_c": 94}, ago(10)),
        d.GpuLatest("n1", 3, "H100", {"temp_c": 99}, ago(3600)),  # stale
    ]
    first = by_target(d.thermal(gpus, now=NOW, limits=L))
    assert {f.status for f in first.values()} == {"pass"} and "gpu:n1/3" not in first
    assert first["gpu:n1/0"].details["hot_runs"] == 1 and first["gpu:n1/2"].details["hot_runs"] == 0
    streak = {t: f.details["hot_runs"] for t, f in first.items()}
    out = by_target(d.thermal(gpus, now=NOW, limits=L, hot_runs=streak))
    assert out["gpu:n1/0"].status == "warn" and out["gpu:n1/0"].category == "gpu_thermal"
    assert out["gpu:n1/1"].status == "warn" and out["gpu:n1/2"].status == "pass"
    assert out["gpu:n1/0"].node_state is None and out["gpu:n1/0"].severity == "sev4"


def test_thermal_says_what_it_did_not_judge():
    """Never a silent pass: a temperature a GPU did not report is named in its result, with
    the exporter that cannot report it (Gaudi's publishes no HBM temperature)."""
    gpus = [
        d.GpuLatest("g1", 0, "HL-325L", {"temp_c": 60}, ago(10), source="gaudi"),
        d.GpuLatest("n1", 0, "H100", {"mem_temp_c": 70}, ago(10)),
        d.GpuLatest("n1", 1, "H100", {}, ago(10)),
        d.GpuLatest("n1", 2, "H100", {"temp_c": 60, "mem_temp_c": 70}, ago(10)),
    ]
    out = by_target(d.thermal(gpus, now=NOW, limits=L))
    assert out["gpu:g1/0"].status == "pass"
    assert (
        out["gpu:g1/0"].message
        == "within limits (HBM temperature not reported by Intel Gaudi metric exporter)"
    )
    assert out["gpu:n1/0"].message == "within limits (GPU temperature not reported)"
    assert out["gpu:n1/1"].message == "no temperature reported: not checked"
    assert out["gpu:n1/2"].message == "within limits"


def test_preflight():
    problems = d.preflight(
        [("a", "healthy", ""), ("b", "suspect", "slow"), ("c", "healthy", "")],
        {"c": ["gpu_errors"]},
    )
    assert problems == [
        {"node": "b", "reason": "state suspect: slow"},
        {"node": "c", "reason": "failed the gpu_errors check in the last hour"},
    ]


def _probes(node: str, values: list[float]) -> list[d.GpuLatest]:
    return [
        d.GpuLatest(node, i, "H100", {"gemm_checksum": v}, NOW, NOW) for i, v in enumerate(values)
    ]


def test_sdc_votes_by_node_so_two_nodes_cannot_outvote_an_honest_one():
    """Issue 32: two nodes' 16 GPUs outvoted an honest node's 8. Votes count by node, and
    the value a GPU disagrees with needs at least 3 nodes other than its own."""
    gpus = _probes("a", [6.0] * 8) + _probes("b", [6.0] * 8) + _probes("honest", [1.0] * 8)
    out = by_target(d.sdc([], {}, gpus, limits=L))
    assert not [t for t, f in out.items() if f.status != "pass"]
    # With a third node agreeing, a, b and c are 3 of 4 nodes and 3 besides honest's own.
    out = by_target(d.sdc([], {}, gpus + _probes("c", [6.0] * 8), limits=L))
    fails = {t for t, f in out.items() if f.status == "fail"}
    assert fails == {f"gpu:honest/{i}" for i in range(8)}


def test_sdc_a_node_votes_for_most_of_its_gpus_and_a_split_node_casts_none():
    gpus = []
    for n in ("n1", "n2", "n3"):  # each node: 7 GPUs say 5.0, one says 9.0 -> votes 5.0
        gpus += _probes(n, [9.0] + [5.0] * 7)
    # Split evenly: no vote, and 9.0 is never the round's value.
    gpus += _probes("s1", [5.0, 9.0] * 4) + _probes("s2", [7.0, 9.0] * 4)
    out = by_target(d.sdc([], {}, gpus, limits=L))
    fails = {t for t, f in out.items() if f.status == "fail"}
    # 5 nodes in the round; 5.0 has 3 votes (> half), each from 3 nodes other than s1/s2,
    # but for n1's GPU 0 only n2 and n3 vote 5.0 besides n1: 2 < 3, no verdict.
    assert "gpu:n1/0" not in fails and out["gpu:n1/1"].status == "pass"
    assert {f"gpu:s1/{i}" for i in (1, 3, 5, 7)} <= fails
    assert {f"gpu:s2/{i}" for i in range(8)} <= fails
    assert out["gpu:s1/0"].status == "pass"
    assert out["gpu:s1/1"].details["voters"] == 3 and out["gpu:s1/1"].details["nodes"] == 5


def test_sdc_without_a_node_majority_says_nothing():
    gpus = [d.GpuLatest(n, 0, "H100", {"gemm_checksum": 1.0}, NOW, NOW) for n in "abc"]
    gpus += [d.GpuLatest(n, 0, "H100", {"gemm_checksum": 2.0}, NOW, NOW) for n in "def"]
    assert d.sdc([], {}, gpus, limits=L) == []


def test_an_incident_title_names_the_gpus_and_ports_its_findings_blame():
    from apps.health.detectors.findings import Finding
    from apps.health.incident_text import named_parts, part_words

    def finding(target: str) -> Finding:
        return Finding("fabric", target, "fail", "")

    port, gpu = finding("port:gpu-7/mlx5_5/1"), finding("gpu:gpu-7/3")
    assert named_parts([port, gpu, port], one_host=True) == "port mlx5_5/1, GPU 3"
    assert named_parts([port, finding("gpu:gpu-8/0")], one_host=False) == (
        "gpu-7 port mlx5_5/1, gpu-8 GPU 0"
    )
    many = [finding(f"gpu:gpu-7/{i}") for i in range(5)]
    assert named_parts(many, one_host=True) == "GPU 0, GPU 1, GPU 2 …"
    assert named_parts([finding("node:gpu-7"), finding("job:12")], one_host=True) == ""
    # the XID storm's timeline words, from the same reading of a target
    assert part_words("gpu:h01/0000:17:00.0") == "h01 GPU 0000:17:00.0"
    assert part_words("node:h01") == "node:h01"


def test_an_incident_title_is_cut_to_what_the_field_holds():
    from apps.health.incident_text import fit_title
    from apps.incidents.models import Incident

    most = Incident._meta.get_field("title").max_length  # the field's own bound
    assert fit_title("Thermal: gpu-7 — GPU 3") == "Thermal: gpu-7 — GPU 3"
    long = "Fabric (NIC ports): " + "j" * 200 + " (" + ", ".join(["h" * 60] * 3) + ")"
    cut = fit_title(long)
    assert len(long) > most and len(cut) == most and cut.endswith("…")
    assert cut[:-1] == long[: most - 1]


def test_job_hang_writes_its_numbers_as_the_verdict_does():
    """ "stuck at step 5 746" and the verdict's "last stepped at 5 746": one format, the
    thousands apart by a narrow no-break space, so a number never wraps (issue 42)."""
    from apps.jobs.hang import number

    assert number(5746) == "5\u202f746" and number(41_216_000) == "41\u202f216\u202f000"
    assert number(999) == "999"
    jobs = [d.JobProgress(1, "big", ago(86400), ago(1700), 5746, [10.0] * 50)]
    (found,) = d.job_hang(jobs, now=NOW, limits=L)
    assert "stuck at step 5\u202f746 for 1\u202f700 s" in found.message
    assert "5746" not in found.message and "5 746" not in found.message
