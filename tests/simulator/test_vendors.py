"""`simulate --vendor`: Moore Threads, AMD, Intel and mixed clusters with the right vendors,
models and peaks; on a mixed cluster the probe checks compare GPUs of one model only; the
demo shows a Moore Threads cluster beside the NVIDIA one."""

from __future__ import annotations

import io
import statistics

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from apps.fleet.models import GPU, Cluster, Node
from apps.fleet.vendors import peak_table
from apps.health.checks import sdc as sdc_check
from apps.health.checks import slow_node as slow_check
from apps.health.checks.base import Context
from apps.health.limits import Limits
from apps.jobs.models import Job
from apps.jobs.peaks import job_peaks
from apps.simulator.accelerators import BY_VENDOR, H100, MI300X
from apps.simulator.plan import make_plan

pytestmark = pytest.mark.django_db


def simulate(**opts) -> None:
    call_command("simulate", stdout=io.StringIO(), stderr=io.StringIO(), **opts)


def models_of(cluster: Cluster) -> set[tuple[str, str]]:
    return set(GPU.objects.filter(node__cluster=cluster).values_list("vendor", "model"))


@pytest.mark.parametrize(
    ("vendor", "model", "peak", "mem_gib"),
    [
        ("mthreads", "MTT S4000", 100.0, 48),
        ("amd", "AMD Instinct MI300X", 1307.4, 192),
        ("intel", "HL-325L", 1835.0, 128),
    ],
)
def test_one_vendor_cluster_has_its_model_peak_and_telemetry(vendor, model, peak, mem_gib):
    simulate(gpus=64, days=1, seed=3, vendor=vendor, cluster=f"sim-{vendor}")
    cluster = Cluster.objects.get(name=f"sim-{vendor}")
    assert models_of(cluster) == {(vendor, model)}
    assert cluster.peak_for(model) == peak == peak_table()[model.casefold()].tflops
    assert cluster.peak_tflops_per_gpu == peak
    gpus = list(GPU.objects.filter(node__cluster=cluster).exclude(metrics={}))
    busy = [g.metrics for g in gpus if g.metrics["gpu_util"] > 50]
    assert busy, "the simulated jobs keep some GPUs busy"
    for m in busy:
        assert m["mem_used_mib"] <= mem_gib * 1024
        assert 0.8 * mem_gib * 1024 < m["mem_used_mib"]
        assert 30 < m["temp_c"] < 95 and m["power_w"] > 100
        assert "xid" not in m and "nvlink_bw_total" not in m  # dcgm-exporter's names only
    if vendor == "amd":  # MI3xx publish only a junction temperature: temp_c is it
        assert all(m["temp_junction_c"] == m["temp_c"] for m in busy)
        assert all("nvlink_crc_errors" in m for m in busy)  # XGMI errors
    if vendor == "mthreads":
        assert all(m["mem_total_mib"] == 48 * 1024 for m in busy)
        assert all(m["links_down"] == 0 for m in busy)  # MTLink state, through MTML
    if vendor == "intel":
        assert all("ecc_sbe_total" not in m for m in busy)  # Gaudi's exporter has none


def test_jobs_run_at_their_planned_mfu_of_their_models_peak():
    simulate(gpus=64, days=1, seed=3, vendor="mthreads", cluster="sim-mt")
    cluster = Cluster.objects.get(name="sim-mt")
    jobs = list(Job.objects.filter(cluster=cluster).exclude(last_tokens_per_s=None))
    peaks = job_peaks(cluster, [j.pk for j in jobs])
    assert jobs and set(peaks.values()) == {100.0}
    for job in jobs:
        mfu = 6 * job.n_params * job.last_tokens_per_s / (job.gpu_count * peaks[job.pk] * 1e12)
        assert 0.3 < mfu < 0.6, (job.name, mfu)  # planned 36–52%, ± noise


def test_mixed_cluster_holds_both_models_and_no_job_spans_them():
    simulate(gpus=256, days=2, seed=5, vendor="mixed", cluster="sim-mixed")
    cluster = Cluster.objects.get(name="sim-mixed")
    assert models_of(cluster) == {("nvidia", H100.model), ("amd", MI300X.model)}
    assert cluster.peak_tflops_by_model == {H100.model: 989.4, MI300X.model: 1307.4}
    for job in Job.objects.filter(cluster=cluster):
        assert GPU.objects.filter(node__jobs=job).values("model").distinct().count() == 1


def test_mixed_cluster_probe_checks_find_only_the_planted_straggler():
    """Healthy GPUs of the slower model are no stragglers and their checksum no corruption,
    though a comparison across models would have flagged every H100."""
    simulate(gpus=256, days=2, seed=5, vendor="mixed", cluster="sim-mixed")
    cluster = Cluster.objects.get(name="sim-mixed")
    gemm = {
        model: statistics.median(
            g.metrics["gemm_tflops"]
            for g in GPU.objects.filter(node__cluster=cluster, model=model)
            if "gemm_tflops" in g.metrics
        )
        for model in (H100.model, MI300X.model)
    }
    assert gemm[H100.model] < 0.9 * statistics.median(
        g.metrics["gemm_tflops"] for g in GPU.objects.filter(node__cluster=cluster)
    ), "the models differ enough that one median would misjudge the slower one"
    plan = make_plan(gpus=256, days=2, seed=5, end=timezone.now(), fleet="mixed")
    flagship = plan.jobs[0]
    planted = plan.hostnames[flagship.slow_node]
    now = timezone.now()
    for check in (slow_check, sdc_check):
        ctx = Context(kind=check.SPEC.kind, cluster=cluster, now=now, limits=Limits())
        findings = check.run(ctx)
        assert findings, f"{check.SPEC.kind} judged nothing"
        flagged = {f.target for f in findings if f.status != "pass"}
        if check is slow_check:
            # The straggler node computes slower, and its GPU 3 probes at 86%: both found.
            assert flagged == {f"node:{planted}", f"gpu:{planted}/3"}
        else:
            assert flagged == set()


def test_unknown_vendor_and_taken_hostnames_are_refused():
    with pytest.raises(CommandError, match="vendor"):
        simulate(gpus=64, days=1, vendor="acme")
    simulate(gpus=64, days=1, seed=1)
    with pytest.raises(CommandError, match="host-prefix"):
        simulate(gpus=64, days=1, seed=1, vendor="amd", cluster="second")
    simulate(gpus=64, days=1, seed=1, vendor="amd", cluster="second", host_prefix="amd-")
    assert Node.objects.filter(cluster__name="second", hostname__startswith="amd-r000").exists()


def test_default_stays_nvidia_h100():
    simulate(gpus=64, days=1, seed=1)
    cluster = Cluster.objects.get(name="kuae-sim")
    # its "H100-SXM5-80GB" under the model's one name (docs/pages.md, One name per model)
    assert (cluster.gpu_model, cluster.peak_tflops_per_gpu) == ("NVIDIA H100 80GB HBM3", 989.4)
    assert cluster.peak_tflops_by_model == {}
    assert models_of(cluster) == {("nvidia", "NVIDIA H100 80GB HBM3")}
    assert set(BY_VENDOR) == {"nvidia", "amd", "intel", "mthreads"}


def test_demo_has_a_moore_threads_cluster_beside_the_nvidia_one(settings):
    settings.DEMO = True
    call_command("demo_setup", gpus=64, days=1, stdout=io.StringIO(), stderr=io.StringIO())
    vendors = {c.name: {v for v, _ in models_of(c)} for c in Cluster.objects.filter(simulated=True)}
    assert vendors == {
        "kuae-sim": {"nvidia"},
        "kuae-mtt": {"mthreads"},
        "kuae-mix": {"nvidia", "mthreads"},
    }
    gpu = GPU.objects.filter(node__cluster__name="kuae-mtt").first()
    assert gpu.link_word == "MTLink" and gpu.model == "MTT S4000"


def test_an_incident_names_an_xid_only_on_nvidia_gpus():
    """XIDs are NVIDIA's driver's error codes: a Moore Threads cluster's GPU incidents name
    none (the demo's said "GPU SRAM memory on mt-r000n05 (XID 94)")."""
    from apps.incidents.models import Incident

    for vendor in ("mthreads", "nvidia"):
        simulate(gpus=64, days=7, seed=5, vendor=vendor, cluster=f"x-{vendor}",
                 host_prefix=f"{vendor[:2]}-", failure_rate=0.5)  # fmt: skip
    gpu = ("gpu", "gpu_hbm", "gpu_sram", "gpu_system_processor")
    for vendor, named in (("mthreads", False), ("nvidia", True)):
        titles = list(
            Incident.objects.filter(cluster__name=f"x-{vendor}", category__in=gpu).values_list(
                "title", flat=True
            )
        )
        assert titles, f"{vendor}: the plan drew GPU faults"
        assert all(("(XID " in t) == named for t in titles), titles
