"""An AMD GPU's uncorrectable-ECC growth drains its node as an NVIDIA one's does
(docs/integrations.md, Exporters and their mapping files; docs/checks.md, gpu_errors).

The readings are AMD device-metrics-exporter text in its published shape (names and labels
from the metric list,
https://github.com/ROCm/device-metrics-exporter/blob/main/docs/configuration/metricslist.md):
no AMD GPU is here. They go through the Prometheus intake, then the `gpu_errors` check runs.
"""

from __future__ import annotations

import pytest

from apps.fleet.models import Node
from apps.health.models import CheckResult
from apps.health.services import run_execute
from apps.health.services import runs_execute_now as _now
from apps.incidents.models import Incident

pytestmark = pytest.mark.django_db
URL = "/api/v1/ingest/prometheus/"


def amd_scrape(host: str, uncorrectable: int) -> str:
    lines = []
    for i in range(8):
        labels = f'card_model="0x74a1",gpu_id="{i}",hostname="{host}",serial_number="SN{i}"'
        lines += [
            f"gpu_junction_temperature{{{labels}}} 60",
            f"gpu_ecc_correct_total{{{labels}}} 0",
            f"gpu_ecc_uncorrect_total{{{labels}}} {uncorrectable if i == 5 else 0}",
        ]
    return "\n".join(lines) + "\n"


def run_gpu_errors(cluster) -> None:  # noqa: ANN001
    (run,) = _now(cluster=cluster, kinds=["gpu_errors"], requested_by="test")
    assert run.status == "done", run.error
    assert run_execute(run_id=run.pk) is None  # already ran: claimed once


def test_amd_uncorrectable_ecc_growth_drains_the_node(cluster, fleet):  # noqa: ANN001
    agent = fleet["agent"]
    for uncorrectable in (0, 4):  # two readings: the counter grows by 4
        answer = agent.post(URL, amd_scrape("h09", uncorrectable), content_type="text/plain")
        assert answer.status_code == 202, answer.json()
        run_gpu_errors(cluster)
    result = CheckResult.objects.get(kind="gpu_errors", target="gpu:h09/5")
    assert result.status != "pass"
    assert Incident.objects.get().category == "gpu_hbm"
    assert Node.objects.get(hostname="h09").state == "drained"
