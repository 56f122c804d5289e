"""Vendor and model per GPU (docs/pages.md, Vendors and models): samples carry them, MFU
divides by each GPU's own peak, checks compare GPUs of one model, pages say the vendor's word
for its links."""

from __future__ import annotations

import csv
import datetime as dt

import pytest
from django.test import Client
from django.utils import timezone

from apps.fleet.models import GPU, Node
from apps.fleet.vendors import PEAKS_PATH, link_word, peak_table, peaks_error, vendor_of
from apps.health.models import CheckResult
from apps.health.services import runs_execute_now
from apps.jobs.models import Job
from apps.jobs.peaks import job_peaks
from tests.support import heartbeating_fleet

pytestmark = pytest.mark.django_db


def iso(t: dt.datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def post(agent, samples):  # noqa: ANN001, ANN201
    return agent.post("/api/v1/ingest/telemetry/", {"samples": samples}, format="json")


def sample(host: str, gpu: int, **extra) -> dict:  # noqa: ANN003
    metrics = extra.pop("metrics", {"gpu_util": 1})
    return {"node": host, "gpu": gpu, "ts": iso(timezone.now()), "metrics": metrics, **extra}


def as_model(agent, hosts, vendor: str, model: str) -> None:  # noqa: ANN001
    """Every GPU of `hosts` reports its vendor and model."""
    said = {"vendor": vendor} if vendor else {}
    body = [sample(h, g, model=model, uuid=f"U-{h}-{g}", **said) for h in hosts for g in range(8)]
    response = post(agent, body)
    assert response.status_code == 202, response.json()


@pytest.fixture
def fleet(cluster, api):  # noqa: ANN001, ANN201
    return heartbeating_fleet(cluster, api, count=8, prefix="m", per_rack=8, rack="r")


def test_the_peak_table_cites_a_source_for_every_row():
    with PEAKS_PATH.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(line for line in handle if not line.startswith("#")))
    assert {r["model"] for r in rows} >= {"H100 SXM", "A100", "MI300X", "MTT S4000"}
    for row in rows:
        assert row["source"].startswith("https://"), row
        assert row["vendor"] in ("nvidia", "amd", "intel", "mthreads")
        assert float(row["tflops"]) > 0
    assert peak_table()["nvidia h100 80gb hbm3"].tflops == 989.4
    assert peak_table()["a100"].tflops == 312


def test_vendor_from_the_model_name_and_link_words():
    assert vendor_of("", "AMD Instinct MI300X") == "amd"
    assert vendor_of("", "MTT S4000") == "mthreads"
    assert vendor_of("", "HL-325L") == "intel"
    assert vendor_of("", "NVIDIA H100 80GB HBM3") == "nvidia"
    assert vendor_of("", "Mystery X1") == ""
    assert vendor_of("amd", "anything") == "amd"
    words = [link_word(v) for v in ("nvidia", "amd", "intel", "mthreads", "")]
    assert words == ["NVLink", "XGMI", "Gaudi links", "MTLink", "GPU links"]
    assert peaks_error({"MI300X": 1307.4}) is None
    assert peaks_error({"MI300X": -1}) and peaks_error({"MI300X": "fast"}) and peaks_error([1])


def test_samples_carry_vendor_model_and_uuid(cluster, fleet, api):
    agent = fleet["agent"]
    assert (
        post(agent, [sample("m00", 0, vendor="amd", model="MI300X", uuid="GPU-1")]).status_code
        == 202
    )
    # Each model under its one name (docs/pages.md, One name per model).
    gpu = GPU.objects.get(node__hostname="m00", index=0)
    assert (gpu.vendor, gpu.model, gpu.uuid) == ("amd", "AMD Instinct MI300X", "GPU-1")
    (first, second, *_) = api("mia").get("/api/v1/nodes/m00/").json()["gpus"]
    assert (first["vendor"], first["model"]) == ("amd", "AMD Instinct MI300X")
    # the cluster's "H100"; its vendor read from its model
    assert (second["vendor"], second["model"]) == ("nvidia", "NVIDIA H100 80GB HBM3")
    # A later sample without them keeps what is stored; the careful path reads them too.
    odd = sample("m00", 0, vendor="amd", model="  MI300X ", metrics={"gpu_util": 2})
    assert post(agent, [odd]).status_code == 202
    assert post(agent, [sample("m00", 0)]).status_code == 202
    gpu.refresh_from_db()
    assert (gpu.vendor, gpu.model, gpu.uuid) == ("amd", "AMD Instinct MI300X", "GPU-1")


def test_bad_vendor_or_model_is_a_400_naming_the_sample(cluster, fleet):
    agent = fleet["agent"]
    response = post(agent, [sample("m00", 0), sample("m00", 1, vendor="nvdia")])
    assert response.status_code == 400
    assert "samples[1].vendor" in response.json()
    response = post(agent, [sample("m00", 0, model="x" * 65), sample("m00", 1, uuid=7)])
    assert response.status_code == 400
    assert {"samples[0].model", "samples[1].uuid"} <= set(response.json())
    assert not GPU.objects.filter(vendor="nvdia").exists()


def test_peak_tflops_by_model_on_the_api(cluster, api):
    client = api("root")  # an admin
    bad = client.patch(
        "/api/v1/clusters/c1/", {"peak_tflops_by_model": {"MI300X": 0}}, format="json"
    )
    assert bad.status_code == 400 and "peak_tflops_by_model" in bad.json()
    bad = client.patch("/api/v1/clusters/c1/", {"peak_tflops_by_model": [1, 2]}, format="json")
    assert bad.status_code == 400 and "peak_tflops_by_model" in bad.json()
    ok = client.patch(
        "/api/v1/clusters/c1/", {"peak_tflops_by_model": {"MI300X": 1300}}, format="json"
    )
    assert ok.status_code == 200, ok.content
    assert ok.json()["peak_tflops_by_model"] == {"MI300X": 1300.0}
    created = client.post(
        "/api/v1/clusters/",
        {
            "name": "c2",
            "gpu_model": "MTT S4000",
            "peak_tflops_per_gpu": 100,
            "gpus_per_node": 8,
            "peak_tflops_by_model": {"H100": 989.4},
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    assert created.json()["peak_tflops_by_model"] == {"H100": 989.4}


def test_mfu_divides_by_the_sum_of_its_gpus_peaks(cluster, fleet):
    agent, job = fleet["agent"], fleet["job"]  # 32 GPUs on m00..m03; cluster: H100 at 989.4
    as_model(agent, ["m02", "m03"], "amd", "MI300X")
    cluster.peak_tflops_by_model = {"MI300X": 1300.0}
    cluster.save()
    job = Job.objects.get(pk=job.pk)
    # Half H100 (the cluster's own peak), half MI300X (the cluster's map).
    assert job.peak_tflops == pytest.approx((989.4 + 1300.0) / 2)
    job.last_tokens_per_s = 1e5
    expected = 6 * 70e9 * 1e5 / (16 * 989.4e12 + 16 * 1300e12)
    assert job.mfu_now() == pytest.approx(expected)
    # Without the map, MI300X comes from the cited table.
    cluster.peak_tflops_by_model = {}
    cluster.save()
    assert job_peaks(cluster, [job.pk])[job.pk] == pytest.approx((989.4 + 1307.4) / 2)


def test_a_model_without_a_peak_leaves_mfu_unknown(cluster, fleet, users):
    agent, job = fleet["agent"], fleet["job"]
    as_model(agent, ["m03"], "", "Mystery X1")
    job = Job.objects.get(pk=job.pk)
    job.last_tokens_per_s = 1e5
    assert job.peak_tflops is None and job.mfu_now() is None
    Job.objects.filter(pk=job.pk).update(last_tokens_per_s=1e5)
    web = Client()
    web.force_login(users["erin"])
    assert "peak unknown" in web.get(f"/jobs/{job.pk}/").content.decode()
    assert "peak unknown" in web.get("/jobs/").content.decode()


def _gemm(agent, hosts, values) -> None:  # noqa: ANN001
    body = [sample(h, 0, metrics={"gemm_tflops": v}) for h, v in zip(hosts, values, strict=True)]
    assert post(agent, body).status_code == 202


def _slow() -> set[str]:
    return set(
        CheckResult.objects.filter(kind="slow_node")
        .exclude(status="pass")
        .values_list("target", flat=True)
    )


def test_a_straggler_is_found_among_its_own_model_only(cluster, fleet):
    agent = fleet["agent"]
    hosts = [f"m{i:02d}" for i in range(8)]
    as_model(agent, hosts[4:], "mthreads", "MTT S4000")  # m00-m03 keep the cluster's H100
    # The S4000s are legitimately far slower than the H100s: nothing to flag.
    _gemm(agent, hosts, [720, 722, 718, 721, 95, 96, 94, 95])
    (run,) = runs_execute_now(cluster=cluster, kinds=["slow_node"], requested_by="test")
    assert run.status == "done", run.error
    assert _slow() == set()
    # One S4000 slow among S4000s: found, and only it.
    _gemm(agent, hosts, [720, 722, 718, 721, 95, 70, 94, 95])
    runs_execute_now(cluster=cluster, kinds=["slow_node"], requested_by="test")
    assert _slow() == {"gpu:m05/0"}
    assert Node.objects.get(hostname="m05").state == "suspect"
    assert "MTT S4000" in CheckResult.objects.get(kind="slow_node", target="gpu:m05/0").message


def test_pages_name_the_link_by_the_vendor_word(cluster, fleet, users):
    agent = fleet["agent"]
    Node.objects.filter(hostname__in=["m00", "m01"]).update(nvlink_domain="dom-1")
    as_model(agent, ["m01"], "amd", "MI300X")
    web = Client()
    web.force_login(users["erin"])
    amd = web.get("/nodes/m01/").content.decode()
    assert "XGMI dom-1" in amd and "XGMI CRC" in amd and "AMD Instinct MI300X" in amd
    assert "NVLink" not in amd, [amd[i - 200 : i + 50] for i in _all(amd, "NVLink")]
    nvidia = web.get("/nodes/m00/").content.decode()
    assert "NVLink dom-1" in nvidia and "NVLink CRC" in nvidia and "NVIDIA H100" in nvidia
    # A model that already names its vendor is not prefixed twice.
    as_model(agent, ["m03"], "nvidia", "NVIDIA H100 80GB HBM3")
    named = web.get("/nodes/m03/").content.decode()
    assert "8 × NVIDIA H100 80GB HBM3" in named and "NVIDIA NVIDIA" not in named
    # The header names the one model; the GPU table adds a Model column only for several.
    assert '<th scope="col">Model</th>' not in named
    assert post(agent, [sample("m04", 5, model="MI300X", vendor="amd")]).status_code == 202
    mixed = web.get("/nodes/m04/").content.decode()
    assert mixed.count('<th scope="col">Model</th>') == 1
    assert "7 × NVIDIA H100" in mixed and "1 × AMD Instinct MI300X" in mixed
    assert '<td class="small">AMD Instinct MI300X</td>' in mixed
    # A Moore Threads node's gaps name no NVIDIA exporter: its reader does not send them.
    as_model(agent, ["m02"], "mthreads", "MTT S4000")
    mtt = web.get("/nodes/m02/").content.decode()
    assert "MTLink CRC not reported</span> by any GPU: the source these GPUs report" in mtt
    assert "dcgm" not in mtt


def _all(text: str, word: str) -> list[int]:
    out, i = [], text.find(word)
    while i >= 0:
        out.append(i)
        i = text.find(word, i + 1)
    return out


def test_posted_json_with_an_amd_pci_device_id_as_model_files_the_models_name(cluster, fleet):
    """A sender that posts AMD's `card_model` as it found it (a PCI device id) gets the
    model's name stored, as exporter text does; another vendor's text is kept as sent."""
    from apps.fleet.models import GPU

    agent = fleet["agent"]
    as_model(agent, ["m00"], "amd", "0x74a1")
    as_model(agent, ["m01"], "nvidia", "0x74a1")
    models = dict(GPU.objects.filter(index=0).values_list("node__hostname", "model"))
    assert models["m00"] == "AMD Instinct MI300X" and models["m01"] == "0x74a1"
