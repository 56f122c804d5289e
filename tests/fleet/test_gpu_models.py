"""One name per GPU model (docs/pages.md, One name per model): GPUs of one model stored
under two names — "H100" from the cluster's default, "NVIDIA H100 80GB HBM3" from
dcgm-exporter — are one population for `slow_node`, `sdc` and the GPUs page (issue 42)."""

from __future__ import annotations

import datetime as dt
import importlib

import pytest
from django.apps import apps as django_apps
from django.test import Client
from django.utils import timezone

from apps.fleet.gpu_models import ALIASES, canonical_model, same_model
from apps.fleet.models import GPU, Cluster, Node
from apps.fleet.services import cluster_create
from apps.fleet.vendors import model_name, peak_for, vendor_of
from apps.health import detectors as d
from apps.health.checks import Limits
from apps.health.models import CheckResult
from apps.health.services import runs_execute_now
from apps.reports.gpu_fleet import gpu_fleet
from tests.support import heartbeating_fleet

DCGM_H100 = "NVIDIA H100 80GB HBM3"  # dcgm-exporter's modelName (tests/data/dcgm/h100-node.prom)
HOSTS = [f"m{i:02d}" for i in range(8)]


@pytest.mark.parametrize(
    ("name", "one"),
    [
        ("H100", DCGM_H100),
        ("h100", DCGM_H100),
        ("H100-SXM5-80GB", DCGM_H100),
        ("H100 80GB HBM3", DCGM_H100),
        ("  NVIDIA  H100 80GB HBM3 ", DCGM_H100),
        ("H100 SXM", DCGM_H100),  # the peak table's own name for it
        ("H100 PCIe", "NVIDIA H100 PCIe"),  # another part: not the SXM's population
        ("A100", "NVIDIA A100-SXM4-80GB"),
        ("A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB"),
        ("A100 40GB", "NVIDIA A100-SXM4-40GB"),
        ("A100-PCIE-40GB", "NVIDIA A100-PCIE-40GB"),
        ("H800", "NVIDIA H800"),
        ("H20", "NVIDIA H20"),
        ("H200-SXM-141GB", "NVIDIA H200"),
        ("MI300X", "AMD Instinct MI300X"),
        ("AMD Instinct MI300X", "AMD Instinct MI300X"),
        ("Instinct MI325X", "AMD Instinct MI325X"),
        ("amd mi250x", "AMD Instinct MI250X"),
        ("Gaudi2", "HL-225"),
        ("HL-225", "HL-225"),
        ("Intel Gaudi 3", "HL-325L"),
        ("S4000", "MTT S4000"),
        ("Moore Threads MTT S4000", "MTT S4000"),
        ("MTT S4000", "MTT S4000"),
        (" Mystery X1 ", "Mystery X1"),  # unknown: as given, trimmed
        ("H100X", "H100X"),
        ("", ""),
    ],
)
def test_every_name_of_a_model_is_its_one_name(name: str, one: str) -> None:
    assert canonical_model(name) == one
    assert canonical_model(one) == one  # the one name is its own


def test_the_table_names_each_alias_once_and_every_known_model_keeps_its_peak() -> None:
    names = [n.casefold() for model, aliases in ALIASES.items() for n in (model, *aliases)]
    assert len(names) == len(set(names))
    assert same_model("H100", DCGM_H100) and not same_model("H100", "H100 PCIe")
    # The peak table finds the one names it knows; the cluster's own peak applies to its
    # default model under either name, and a peak map's key under any name.
    kw = {"gpu_model": "H100", "peak_tflops_per_gpu": 900.0, "by_model": {}}
    assert peak_for(DCGM_H100, **kw) == 900.0
    assert peak_for("AMD Instinct MI300X", **(kw | {"by_model": {"MI300X": 1300}})) == 1300.0
    assert peak_for("MI300X", **kw) == 1307.4 and peak_for("Gaudi2", **kw) == 432
    assert peak_for("NVIDIA A100-SXM4-80GB", **kw) == 312
    assert vendor_of("", "H100") == "nvidia" and vendor_of("", "S4000") == "mthreads"
    # The intake's filing: an AMD PCI device id, then the one name.
    assert model_name("amd", "0x74a1") == "AMD Instinct MI300X"
    assert model_name("amd", "MI300X") == model_name("", "MI300X") == "AMD Instinct MI300X"
    assert model_name("nvidia", "0x74a1") == "0x74a1"


def _latest(host: str, model: str, metrics: dict, probe: dt.datetime | None = None):  # noqa: ANN202
    return d.GpuLatest(host, 0, model, metrics, timezone.now(), probe)


def test_the_detectors_compare_a_model_under_both_names_as_one() -> None:
    """Six GPUs named by a cluster default, two by dcgm-exporter: the slow one and the one
    with the odd checksum are judged against all eight, not against their one namesake."""
    names = ["H100"] * 6 + [DCGM_H100] * 2
    gemm = [720.0] * 7 + [600.0]
    found = d.slow_node(
        {},
        [_latest(h, m, {"gemm_tflops": v}) for h, m, v in zip(HOSTS, names, gemm, strict=True)],
        limits=Limits(),
    )
    assert [f.target for f in found if f.status != "pass"] == ["gpu:m07/0"]
    assert len(found) == 8
    now = timezone.now()
    sums = [1.0] * 7 + [2.0]
    found = d.sdc(
        [],
        {},
        [
            _latest(h, m, {"gemm_checksum": v}, now)
            for h, m, v in zip(HOSTS, names, sums, strict=True)
        ],
        limits=Limits(),
    )
    assert [f.target for f in found if f.status != "pass"] == ["gpu:m07/0"]


@pytest.fixture
def fleet(cluster, api):  # noqa: ANN001, ANN201
    fleet = heartbeating_fleet(cluster, api, count=8, prefix="m", per_rack=8, rack="r")
    # m06 and m07 run dcgm-exporter, which names their model; m00-m05 have the cluster's.
    body = [
        {"node": h, "gpu": g, "ts": _iso(timezone.now()), "metrics": {"gpu_util": 1}}
        | {"model": DCGM_H100, "vendor": "nvidia", "uuid": f"GPU-{h}-{g}"}
        for h in HOSTS[6:]
        for g in range(8)
    ]
    assert _post(fleet["agent"], body).status_code == 202
    return fleet


def _iso(t: dt.datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def _post(agent, samples):  # noqa: ANN001, ANN202
    return agent.post("/api/v1/ingest/telemetry/", {"samples": samples}, format="json")


def _probe(agent, key: str, values: list[float]) -> None:  # noqa: ANN001
    now = _iso(timezone.now())
    body = [
        {"node": h, "gpu": 0, "ts": now, "metrics": {key: v}}
        for h, v in zip(HOSTS, values, strict=True)
    ]
    assert _post(agent, body).status_code == 202


def _not_passing(kind: str) -> set[str]:
    return set(
        CheckResult.objects.filter(kind=kind)
        .exclude(status="pass")
        .values_list("target", flat=True)
    )


@pytest.mark.django_db
def test_a_mixed_source_fleet_is_one_population_for_slow_node_and_sdc(cluster, fleet):
    agent = fleet["agent"]
    # The slow GPU is one of the two dcgm-named ones: against them alone (median 660) it is
    # within 10 %, against all eight H100s (median 720) it is not.
    _probe(agent, "gemm_tflops", [720, 722, 718, 721, 720, 719, 720, 600])
    (run,) = runs_execute_now(cluster=cluster, kinds=["slow_node"], requested_by="test")
    assert run.status == "done", run.error
    assert _not_passing("slow_node") == {"gpu:m07/0"}
    assert DCGM_H100 in CheckResult.objects.get(kind="slow_node", target="gpu:m07/0").message
    assert Node.objects.get(hostname="m07").state == "suspect"
    # The odd checksum is outvoted by the seven other nodes, not tied one against one.
    _probe(agent, "gemm_checksum", [1834.25] * 7 + [1834.5])
    (run,) = runs_execute_now(cluster=cluster, kinds=["sdc"], requested_by="test")
    assert run.status == "done", run.error
    assert _not_passing("sdc") == {"gpu:m07/0"}
    # Stored so: the cluster's "H100" and its GPUs under the model's one name.
    assert Cluster.objects.get(pk=cluster.pk).gpu_model == DCGM_H100
    assert set(GPU.objects.values_list("model", flat=True)) == {DCGM_H100}


def _clocks(cluster: Cluster, slow: tuple[str, int]) -> dt.datetime:
    now = timezone.now()
    rows = []
    for g in GPU.objects.filter(node__cluster=cluster).select_related("node"):
        clock = 1400 if (g.node.hostname, g.index) == slow else 1755
        g.metrics = {"temp_c": 60, "gpu_util": 95, "sm_clock_mhz": clock, "power_w": 600}
        g.updated_at = now - dt.timedelta(seconds=30)
        rows.append(g)
    GPU.objects.bulk_update(rows, ["metrics", "updated_at"])
    return now


@pytest.mark.django_db
def test_the_gpus_page_shows_one_model_for_both_names(cluster, fleet, users):
    # Names stored before the table (no migration run yet, or a row written by hand) are
    # one model on the page too.
    GPU.objects.filter(node__hostname__in=HOSTS[:3]).update(model="H100")
    GPU.objects.filter(node__hostname="m03").update(model="")
    now = _clocks(cluster, ("m07", 2))
    ranked = gpu_fleet(cluster=cluster, now=now).rankings
    assert ranked.max_clocks == {DCGM_H100: 1755} and ranked.counted == 64
    assert [(r.gpu.hostname, r.gpu.index) for r in ranked.throttled] == [("m07", 2)]
    assert {r.gpu.model for r in ranked.hottest} == {DCGM_H100}
    web = Client()
    web.force_login(users["mia"])
    html = web.get("/gpus/", {"cluster": cluster.name}).content.decode()
    assert f"per GPU model: {DCGM_H100} 1,755 MHz." in html
    assert '<th scope="col">Model</th>' not in html
    # The node page counts its GPUs of both names as one model.
    page = web.get("/nodes/m00/").content.decode()
    assert f"8 × {DCGM_H100}" in page and '<th scope="col">Model</th>' not in page


@pytest.mark.django_db
def test_the_migration_puts_stored_names_under_their_one_name(cluster, nodes):
    Cluster.objects.filter(pk=cluster.pk).update(gpu_model=" H100-SXM5-80GB ")
    GPU.objects.filter(node=nodes[0]).update(model="H100")
    GPU.objects.filter(node=nodes[1]).update(model="0x74a1", vendor="amd")
    GPU.objects.filter(node=nodes[2]).update(model=" Mystery X1 ")
    GPU.objects.filter(node=nodes[3]).update(model="")
    migration = importlib.import_module("apps.fleet.migrations.0022_gpu_model_one_name")
    migration.one_name(django_apps, None)
    assert Cluster.objects.get(pk=cluster.pk).gpu_model == DCGM_H100
    models = dict(GPU.objects.filter(index=0).values_list("node__hostname", "model"))
    assert models[nodes[0].hostname] == DCGM_H100
    assert models[nodes[1].hostname] == "AMD Instinct MI300X"
    assert models[nodes[2].hostname] == "Mystery X1"
    assert models[nodes[3].hostname] == ""  # never reported: still the cluster's
    assert models[nodes[4].hostname] == DCGM_H100


@pytest.mark.django_db
def test_a_cluster_created_under_a_short_name_answers_with_the_one_name(api, db):
    body = {"name": "k2", "gpu_model": "MI300X", "peak_tflops_per_gpu": 1307.4, "gpus_per_node": 8}
    created = api("root").post("/api/v1/clusters/", body, format="json")
    assert created.status_code == 201 and created.json()["gpu_model"] == "AMD Instinct MI300X"
    made = cluster_create(
        name="k3", gpu_model=" Mystery X1 ", peak_tflops_per_gpu=1, gpus_per_node=8
    )
    assert made.gpu_model == "Mystery X1"
