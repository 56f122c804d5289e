"""The demo's mixed cluster (docs/simulator.md, The demo): `kuae-mix` holds NVIDIA H100 and
Moore Threads MTT S4000 nodes, each GPU with its own vendor's telemetry (dcgm-exporter's
fields, MTML's), before and after a live tick; no job spans both models; the GPUs page and
the overview show the two models side by side, each with its own figures and a "not reported
by" where its way in sends no such value."""

from __future__ import annotations

import datetime as dt
import io
import random
import re

import pytest
from django.core.management import call_command
from django.utils import timezone

from apps.accounts.models import User
from apps.fleet.models import GPU, Cluster
from apps.jobs.models import Job
from apps.simulator import demo
from apps.simulator.accelerators import H100, MIXED_MTHREADS, S4000, fleet_models
from apps.simulator.demo import demo_tick
from apps.simulator.plan import make_plan

pytestmark = pytest.mark.django_db


@pytest.fixture
def mixed(settings, tmp_path) -> Cluster:  # noqa: ANN001
    settings.DEMO = True
    settings.VAR_DIR = tmp_path
    call_command("demo_setup", gpus=64, days=1, stdout=io.StringIO(), stderr=io.StringIO())
    return Cluster.objects.get(name="kuae-mix")


def _by_model(cluster: Cluster) -> dict[str, list[GPU]]:
    out: dict[str, list[GPU]] = {}
    for gpu in GPU.objects.filter(node__cluster=cluster).select_related("node"):
        out.setdefault(gpu.model, []).append(gpu)
    return out


def _vendor_fields(gpus: dict[str, list[GPU]]) -> None:
    h100, s4000 = gpus[H100.model], gpus[S4000.model]
    assert {g.vendor for g in h100} == {"nvidia"} and {g.vendor for g in s4000} == {"mthreads"}
    assert all({"xid", "tensor_active", "nvlink_bw_total"} <= set(g.metrics) for g in h100)
    for g in s4000:  # MTML through the agent: memory total and MTLink state, no XID
        assert {"mem_total_mib", "links_down"} <= set(g.metrics), g.metrics
        assert not {"xid", "tensor_active", "sm_clock_mhz"} & set(g.metrics), g.metrics


def test_mixed_mthreads_plan_splits_the_nodes_and_no_job_spans_both_models():
    assert fleet_models(MIXED_MTHREADS) == (H100, S4000)
    plan = make_plan(gpus=64, days=1, seed=3, end=timezone.now(), fleet=MIXED_MTHREADS)
    assert [g.model for g in plan.gpus] == [H100.model] * 4 + [S4000.model] * 4
    for job in plan.jobs:
        assert len({plan.gpu_of(n).model for n in job.nodes}) == 1, job.name


def test_demo_has_a_mixed_cluster_each_gpu_with_its_vendor_s_telemetry(mixed, monkeypatch):
    gpus = _by_model(mixed)
    assert {m: len(g) for m, g in gpus.items()} == {H100.model: 32, S4000.model: 32}
    assert mixed.peak_tflops_by_model == {H100.model: 989.4, S4000.model: 100.0}
    assert all(g.node.hostname.startswith("mx-") for gs in gpus.values() for g in gs)
    _vendor_fields(gpus)
    for job in Job.objects.filter(cluster=mixed):
        models = set(GPU.objects.filter(node__in=job.nodes.all()).values_list("model", flat=True))
        assert len(models) == 1, job.name
    # The live demo keeps each vendor's own fields.
    monkeypatch.setattr(demo, "FAULT_CHANCE", 0)
    demo_tick(now=timezone.now() + dt.timedelta(seconds=15), rng=random.Random(1))
    _vendor_fields(_by_model(mixed))


def _models_card(html: str) -> dict[str, str]:
    """The GPU models card's rows: model name → the row's text."""
    card = html[html.index('id="gpu-models"') :]
    card = card[: card.index("</table>")]
    rows = re.findall(r'<tr data-model="([^"]+)">(.*?)</tr>', card, re.S)
    return {model: re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", row)) for model, row in rows}


def test_gpus_page_and_overview_show_both_models_side_by_side(mixed, client):  # noqa: ANN001
    client.force_login(User.objects.get(username="demo"))
    for page in ("/gpus/", "/"):
        html = client.get(page, {"cluster": "kuae-mix"}).content.decode()
        rows = _models_card(html)
        assert set(rows) == {H100.model, S4000.model}, page
        h100, s4000 = rows[H100.model], rows[S4000.model]
        assert "NVIDIA H100 80GB HBM3 NVIDIA NVLink 32 32 " in h100
        assert "Moore Threads MTT S4000 Moore Threads MTLink 32 32 " in s4000
        assert "989.4" in h100 and "100.0" in s4000  # each model's own peak
        assert "not reported" not in h100 and "dcgm-exporter" in h100
        # tensor activity, SM clock and memory temperature: MTML sends none
        assert s4000.count("not reported by MTML (the node agent)") == 3, s4000
    # One model: no models card on the overview (the GPUs page keeps its one row).
    html = client.get("/", {"cluster": "kuae-sim"}).content.decode()
    assert 'id="gpu-models"' not in html
    rows = _models_card(client.get("/gpus/", {"cluster": "kuae-sim"}).content.decode())
    assert list(rows) == [H100.model]
