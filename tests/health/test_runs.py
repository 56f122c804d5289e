"""Each condition of docs/checks.md, fed through the intake endpoints: the result, the incident and
the node state it names; nothing on healthy nodes; repeated runs never duplicate incidents."""

from __future__ import annotations

import datetime as dt
import io
import json

import pytest
from django.core.management import call_command
from django.utils import timezone

from apps.fleet.models import GPU, Node, NodeStateChange
from apps.fleet.services import cluster_automation_set
from apps.health.checks import SCHEDULED_KINDS
from apps.health.models import CheckResult, CheckRun, CheckSchedule
from apps.health.services import run_execute, runs_execute_now, schedules_claim_due
from apps.incidents.models import Incident, TimelineEntry
from tests.health.conftest import backdate

pytestmark = pytest.mark.django_db


def check(cluster, kind):  # noqa: ANN001, ANN201
    (run,) = runs_execute_now(cluster=cluster, kinds=[kind], requested_by="test")
    assert run.status == "done", run.error
    return run


def result(kind: str, target: str) -> CheckResult:
    return CheckResult.objects.get(kind=kind, target=target)


def failing(kind: str) -> set[str]:
    return set(
        CheckResult.objects.filter(kind=kind)
        .exclude(status="pass")
        .values_list("target", flat=True)
    )


def iso(t: dt.datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def telemetry(agent, host: str, gpu: int, **metrics):  # noqa: ANN001, ANN201
    """A node's exporter sweep: `metrics` for GPU `gpu`, a utilisation for its 7 others."""
    ts = iso(timezone.now())
    body = {
        "samples": [
            {"node": host, "gpu": i, "ts": ts, "metrics": metrics if i == gpu else {"gpu_util": 0}}
            for i in range(8)
        ]
    }
    assert agent.post("/api/v1/ingest/telemetry/", body, format="json").status_code == 202


def test_heartbeat_silence_downs_the_node_and_interrupts_its_job(cluster, fleet):
    silent_since = backdate("h02", 400)
    run = check(cluster, "heartbeat")
    assert failing("heartbeat") == {"node:h02"}
    assert run.counts["pass"] == 15 and run.counts["fail"] == 1
    incident = Incident.objects.get()
    assert (incident.category, incident.severity, incident.source) == (
        "node_unreachable",
        "sev2",
        "health",
    )
    assert incident.job == fleet["job"] and incident.interrupts_job
    assert list(incident.nodes.values_list("hostname", flat=True)) == ["h02"]
    assert abs((incident.occurred_at - silent_since).total_seconds()) < 1
    node = Node.objects.get(hostname="h02")
    assert node.state == "down" and node.state_reason.startswith("heartbeat: no heartbeat")
    check(cluster, "heartbeat")
    assert Incident.objects.count() == 1  # repeated runs update, never duplicate
    # It comes back: the result passes, the incident stays open with the clearing noted.
    fleet["agent"].post("/api/v1/nodes/h02/heartbeat/", {}, format="json")
    check(cluster, "heartbeat")
    assert result("heartbeat", "node:h02").status == "pass"
    incident.refresh_from_db()
    assert incident.status == "open"
    assert incident.timeline.filter(kind=TimelineEntry.Kind.CLEARED).count() == 1
    assert Node.objects.get(hostname="h02").state == "down"  # an operator returns it


def test_many_silent_nodes_is_one_cluster_incident_and_no_node_changes(cluster, fleet):
    for host in ("h05", "h06", "h07"):  # 3 of 16 > 10%
        backdate(host, 900)
    check(cluster, "heartbeat")
    check(cluster, "heartbeat")
    incident = Incident.objects.get()
    assert incident.category == "node_unreachable" and incident.job is None
    assert failing("heartbeat") == {"cluster:c1"}
    assert not Node.objects.exclude(state="healthy").exists()


def test_a_hang_names_the_job_and_when_it_stopped(cluster, fleet):
    job = fleet["job"]
    last = timezone.now() - dt.timedelta(minutes=15)
    samples = [
        {
            "ts": iso(last - dt.timedelta(seconds=10 * i)),
            "step": 100 - i,
            "step_time_s": 10.0,
            "tokens_per_s": 3e5,
        }
        for i in range(60)
    ]
    fleet["agent"].post(f"/api/v1/jobs/{job.pk}/metrics/", {"samples": samples}, format="json")
    check(cluster, "job_hang")
    check(cluster, "job_hang")
    assert failing("job_hang") == {f"job:{job.pk}"}
    incident = Incident.objects.get()
    assert (incident.category, incident.severity, incident.job_id) == ("hang", "sev1", job.pk)
    assert incident.interrupts_job and incident.occurred_at == last.replace(
        microsecond=last.microsecond
    )
    assert not Node.objects.exclude(state="healthy").exists()


def _post_steps(agent, job, rows) -> None:  # noqa: ANN001
    """rows: (seconds ago, step, node or None)."""
    now = timezone.now()
    samples = [
        {
            "ts": iso(now - dt.timedelta(seconds=ago)),
            "step": step,
            "step_time_s": 10.0,
            **({"node": node, "compute_s": 8.0} if node else {"tokens_per_s": 3e5}),
        }
        for ago, step, node in rows
    ]
    response = agent.post(f"/api/v1/jobs/{job.pk}/metrics/", {"samples": samples}, format="json")
    assert response.status_code == 202, response.content


def test_a_job_reporting_only_per_node_samples_is_progressing(cluster, fleet):
    job = fleet["job"]
    # No job-wide sample for an hour (it sent some once), but every node moves on each step.
    _post_steps(fleet["agent"], job, [(3600 + 10 * i, 40 - i, None) for i in range(5)])
    rows = [(10 * i, 400 - i, host) for i in range(30) for host in ("h00", "h01", "h02", "h03")]
    _post_steps(fleet["agent"], job, rows)
    check(cluster, "job_hang")
    assert failing("job_hang") == set() and not Incident.objects.exists()
    assert result("job_hang", f"job:{job.pk}").details["step"] == 400


def test_a_job_that_keeps_reporting_the_same_step_is_hung(cluster, fleet):
    job = fleet["job"]
    # Step 700 was reached 20 minutes ago; every rank has re-reported it since, fresh.
    rows = [(1200 + 10 * i, 700 - i, None) for i in range(20)]
    rows += [(10 * i, 700, host) for i in range(60) for host in ("h00", "h01")]
    rows += [(10 * i + 5, 700, None) for i in range(60)]
    _post_steps(fleet["agent"], job, rows)
    check(cluster, "job_hang")
    assert failing("job_hang") == {f"job:{job.pk}"}
    incident = Incident.objects.get()
    assert incident.category == "hang" and incident.severity == "sev1"
    assert abs((timezone.now() - incident.occurred_at).total_seconds() - 1200) < 5


def test_samples_arriving_out_of_order_keep_the_first_time_a_step_was_reached(cluster, fleet):
    job = fleet["job"]
    _post_steps(fleet["agent"], job, [(30, 50, "h00")])
    _post_steps(fleet["agent"], job, [(90, 50, "h01"), (100, 49, None)])  # late, earlier
    _post_steps(fleet["agent"], job, [(20, 48, None)])  # a lower step: no progress
    job.refresh_from_db()
    assert job.progress_step == 50
    assert abs((timezone.now() - job.progress_at).total_seconds() - 90) < 5


def test_a_straggler_is_suspect(cluster, fleet):
    job = fleet["job"]
    now = timezone.now()
    samples = []
    for i in range(20):
        for host, compute in (("h00", 8.0), ("h01", 8.1), ("h02", 7.9), ("h03", 9.6)):
            samples.append(
                {
                    "ts": iso(now - dt.timedelta(seconds=10 * i)),
                    "step": 500 - i,
                    "step_time_s": 10.0,
                    "node": host,
                    "compute_s": compute,
                }
            )
    fleet["agent"].post(f"/api/v1/jobs/{job.pk}/metrics/", {"samples": samples}, format="json")
    check(cluster, "slow_node")
    assert failing("slow_node") == {"node:h03"}
    assert result("slow_node", "node:h03").details["ratio"] == pytest.approx(9.6 / 8.05, rel=1e-3)
    incident = Incident.objects.get()
    assert (incident.category, incident.severity, incident.interrupts_job) == (
        "slow_node",
        "sev3",
        False,
    )
    assert Node.objects.get(hostname="h03").state == "suspect"
    assert set(Node.objects.filter(state="suspect").values_list("hostname", flat=True)) == {"h03"}


def test_a_slow_gemm_gpu_is_suspect(cluster, fleet):
    for i, node in enumerate(fleet["nodes"][:8]):
        telemetry(fleet["agent"], node.hostname, 0, gemm_tflops=600.0 if i == 5 else 720.0 + i)
    check(cluster, "slow_node")
    assert failing("slow_node") == {"gpu:h05/0"}
    assert Node.objects.get(hostname="h05").state == "suspect"


def test_sdc_from_a_nan_loss_and_from_a_wrong_checksum(cluster, fleet):
    job = fleet["job"]
    when = iso(timezone.now() - dt.timedelta(seconds=30))
    sample = {"ts": when, "step": 9, "step_time_s": 10, "tokens_per_s": 3e5, "loss": float("nan")}
    body = json.dumps({"samples": [sample]})  # Python's json writes NaN, as trainers do
    fleet["agent"].post(f"/api/v1/jobs/{job.pk}/metrics/", body, content_type="application/json")
    for i, node in enumerate(fleet["nodes"][:6]):
        telemetry(fleet["agent"], node.hostname, 1, gemm_checksum=1834.25 if i != 4 else 1834.5)
    check(cluster, "sdc")
    assert failing("sdc") == {f"job:{job.pk}", "gpu:h04/1"}
    by_scope = {(i.job_id is not None): i for i in Incident.objects.all()}
    assert by_scope[True].category == "silent_data_corruption" and by_scope[True].job_id == job.pk
    assert list(by_scope[False].nodes.values_list("hostname", flat=True)) == ["h04"]
    assert Node.objects.get(hostname="h04").state == "suspect"


def test_gpu_errors_drain_and_a_persisting_xid_does_not_refire(cluster, fleet):
    agent = fleet["agent"]
    telemetry(agent, "h01", 2, xid=0, ecc_dbe_total=0)
    telemetry(agent, "h09", 0, xid=0, ecc_dbe_total=0)
    check(cluster, "gpu_errors")
    assert failing("gpu_errors") == set()
    telemetry(agent, "h01", 2, xid=79)
    telemetry(agent, "h09", 0, ecc_dbe_total=3)
    check(cluster, "gpu_errors")
    assert failing("gpu_errors") == {"gpu:h01/2", "gpu:h09/0"}
    incidents = {i.category: i for i in Incident.objects.all()}
    assert (
        incidents["gpu"].job == fleet["job"] and incidents["gpu"].interrupts_job
    )  # h01 is in the job
    assert incidents["gpu_hbm"].job is None and not incidents["gpu_hbm"].interrupts_job
    # The drain cap for 16 nodes is max(1, 2% of 16) = 1 per hour: only one node drained.
    assert Node.objects.filter(state="drained").count() == 1
    telemetry(agent, "h01", 2, xid=79)  # the exporter keeps reporting the last XID
    check(cluster, "gpu_errors")
    assert failing("gpu_errors") == set() and Incident.objects.count() == 2


def test_one_hot_sample_is_not_enough_two_runs_warn_and_it_resolves_after_30_min_clear(
    cluster, fleet
):
    agent = fleet["agent"]
    telemetry(agent, "h07", 3, temp_c=92, mem_temp_c=70)
    telemetry(agent, "h08", 3, temp_c=70, mem_temp_c=80)
    check(cluster, "thermal")
    assert failing("thermal") == set() and not Incident.objects.exists()  # one hot sample
    assert result("thermal", "gpu:h07/3").details["hot_runs"] == 1
    telemetry(agent, "h07", 3, temp_c=70)  # a spike that passed
    check(cluster, "thermal")
    telemetry(agent, "h07", 3, temp_c=91)
    check(cluster, "thermal")
    assert failing("thermal") == set()  # not two runs in a row
    telemetry(agent, "h07", 3, mem_temp_c=96)
    check(cluster, "thermal")
    assert failing("thermal") == {"gpu:h07/3"}
    incident = Incident.objects.get()
    assert (incident.category, incident.severity) == ("gpu_thermal", "sev4")
    assert not Node.objects.exclude(state="healthy").exists()
    telemetry(agent, "h07", 3, temp_c=70, mem_temp_c=70)
    cooled = check(cluster, "thermal")
    assert failing("thermal") == set() and Incident.objects.get().status == "open"
    # Still clear 29 minutes later: open; 31 minutes: resolved by itself, noted, not twice.
    for minutes, status in ((29, "open"), (31, "resolved"), (40, "resolved")):
        telemetry(agent, "h07", 3, temp_c=70)
        (run,) = CheckRun.objects.bulk_create(
            [CheckRun(cluster=cluster, kind="thermal", requested_by="test")]
        )
        later = cooled.started_at + dt.timedelta(minutes=minutes)
        GPU.objects.update(updated_at=later)  # the exporter kept reporting it cool
        assert run_execute(run_id=run.pk, now=later).status == "done"
        assert Incident.objects.get().status == status
    incident = Incident.objects.get()
    assert incident.resolved_at == cooled.started_at + dt.timedelta(minutes=31)
    assert incident.recovered_at == cooled.started_at
    assert incident.timeline.filter(text__contains="resolved").count() >= 1


def test_a_sev2_that_clears_stays_open_for_an_engineer(cluster, fleet):
    agent = fleet["agent"]
    telemetry(agent, "h09", 0, ecc_dbe_total=0)
    check(cluster, "gpu_errors")
    telemetry(agent, "h09", 0, ecc_dbe_total=2)
    first = check(cluster, "gpu_errors")
    assert Incident.objects.get().severity == "sev2"
    (run,) = CheckRun.objects.bulk_create(
        [CheckRun(cluster=cluster, kind="gpu_errors", requested_by="test")]
    )
    assert run_execute(run_id=run.pk, now=first.started_at + dt.timedelta(hours=2))
    assert Incident.objects.get().status == "open"


def test_no_false_positives_on_a_healthy_cluster(cluster, fleet):
    agent = fleet["agent"]
    for node in fleet["nodes"]:
        for gpu in range(2):
            telemetry(
                agent,
                node.hostname,
                gpu,
                temp_c=65,
                mem_temp_c=70,
                xid=0,
                ecc_dbe_total=0,
                gemm_tflops=718.0 + gpu,
                gemm_checksum=1834.25,
            )
    job = fleet["job"]
    now = timezone.now()
    samples = [
        {
            "ts": iso(now - dt.timedelta(seconds=10 * i)),
            "step": 900 - i,
            "step_time_s": 10.0,
            "tokens_per_s": 3e5,
            "loss": 2.1,
        }
        for i in range(30)
    ]
    samples += [
        {
            "ts": iso(now - dt.timedelta(seconds=10 * i)),
            "step": 900 - i,
            "step_time_s": 10.0,
            "node": f"h{n:02d}",
            "compute_s": 8.0 + 0.01 * n,
        }
        for i in range(20)
        for n in range(4)
    ]
    agent.post(f"/api/v1/jobs/{job.pk}/metrics/", {"samples": samples}, format="json")
    runs = runs_execute_now(
        cluster=cluster,
        kinds=["heartbeat", "job_hang", "slow_node", "sdc", "gpu_errors", "thermal"],
        requested_by="test",
    )
    assert all(r.status == "done" for r in runs)
    assert CheckResult.objects.exclude(status="pass").count() == 0
    assert CheckResult.objects.count() > 16 * 2
    assert (
        Incident.objects.count() == 0
        and NodeStateChange.objects.filter(source="check").count() == 0
    )


def test_a_run_is_claimed_once(cluster, fleet):
    run = CheckRun.objects.create(cluster=cluster, kind="heartbeat")
    assert run_execute(run_id=run.pk) is not None
    assert run_execute(run_id=run.pk) is None  # already claimed


def test_schedules_are_claimed_once_per_interval(
    cluster, fleet, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        first = schedules_claim_due()
        again = schedules_claim_due()
    assert {r.kind for r in first} == set(SCHEDULED_KINDS)
    assert again == []
    CheckSchedule.objects.filter(kind="thermal").update(
        next_due_at=timezone.now() - dt.timedelta(seconds=1)
    )
    with django_capture_on_commit_callbacks(execute=False):
        assert [r.kind for r in schedules_claim_due()] == ["thermal"]


def test_run_checks_command_prints_problems(cluster, fleet):
    backdate("h11", 999)
    out, err = io.StringIO(), io.StringIO()
    call_command("run_checks", "--cluster", "c1", "--check", "heartbeat", stdout=out, stderr=err)
    assert out.getvalue().strip().splitlines() == [
        f"FAIL heartbeat node:h11: {result('heartbeat', 'node:h11').message}"
    ]


def test_an_xid_storm_says_its_count_and_the_count_grows(cluster, fleet):
    """Storms (docs/checks.md, Storms): fifty kernel-log lines before a run open one
    incident whose timeline says fifty; thirty more fold in, noted with the new total."""
    agent = fleet["agent"]
    # paused, so the XID 79 drain does not take h01 out of the checks before the second storm
    cluster_automation_set(cluster=cluster, paused=True, reason="storm test", by="otto")
    telemetry(agent, "h01", 3, xid=0, ecc_dbe_total=0)
    check(cluster, "gpu_errors")

    def storm(n: int, offset: int) -> None:
        start = timezone.now() - dt.timedelta(seconds=120)
        events = [
            {"node": "h01", "ts": iso(start + dt.timedelta(seconds=i + offset)), "kind": "xid"}
            | {"code": 79, "gpu": 3}
            for i in range(n)
        ]
        r = agent.post("/api/v1/ingest/events/", {"events": events}, format="json")
        assert r.status_code == 202, r.content

    storm(50, 0)
    check(cluster, "gpu_errors")
    incident = Incident.objects.get()
    lines = list(TimelineEntry.objects.filter(incident=incident).values_list("text", flat=True))
    assert any("XID 79 seen 50 times on h01 GPU 3" in t for t in lines), lines
    assert incident.details["xid_counts"] == {"gpu:h01/3": {"79": 50}}
    storm(30, 60)
    check(cluster, "gpu_errors")
    incident = Incident.objects.get()  # still one incident
    lines = list(TimelineEntry.objects.filter(incident=incident).values_list("text", flat=True))
    assert any("XID 79 seen 30 more times on h01 GPU 3 (80 in all)" in t for t in lines), lines
    assert incident.details["xid_counts"] == {"gpu:h01/3": {"79": 80}}


def test_sdc_a_future_stamp_cannot_push_honest_probes_out_of_the_round(cluster, fleet):
    """Issue 32: the round is placed by when KUAE received the probes. Honest probes stamped
    6 minutes ago and one stamped 4.5 minutes ahead are one round, so h04 still fails."""
    agent = fleet["agent"]

    def probe(host: str, value: float, ts: dt.datetime) -> None:
        sample = {"node": host, "gpu": 0, "ts": iso(ts), "metrics": {"gemm_checksum": value}}
        body = {"samples": [sample]}
        assert agent.post("/api/v1/ingest/telemetry/", body, format="json").status_code == 202

    past = timezone.now() - dt.timedelta(minutes=6)
    for i, node in enumerate(fleet["nodes"][:6]):
        probe(node.hostname, 1834.5 if i == 4 else 1834.25, past)
    probe("h06", 1834.25, timezone.now() + dt.timedelta(minutes=4, seconds=30))
    check(cluster, "sdc")
    assert failing("sdc") == {"gpu:h04/0"}
