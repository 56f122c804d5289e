"""kuae-agent against the real app (live server): delivery, buffering, rejection, probe."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from apps.accounts.services import token_issue, user_create_or_update
from apps.fleet.models import GPU, Node
from apps.fleet.services import NodeSpec, nodes_register
from apps.telemetry.models import TelemetryEvent
from kuae_agent import probe as kuae_probe
from kuae_agent.cli import main
from kuae_agent.client import Client, Outcome
from kuae_agent.probe import ProbeResult
from kuae_agent.sources import parse_smi_csv
from kuae_agent.spool import Spool
from tests.support import LoopbackServer, QuietHandler, closed_port, reply

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def token(cluster, monkeypatch) -> str:  # noqa: ANN001
    nodes_register(cluster=cluster, specs=[NodeSpec(hostname="gpu-a017")])
    raw = token_issue(user=user_create_or_update(username="agent-1", role="agent"))
    monkeypatch.setenv("KUAE_TOKEN", raw)
    return raw


def agent(*args: str) -> int:
    return main(list(args))


def test_once_delivers_the_exporters_text(live_server, exporter, token, tmp_path):
    code = agent(
        "once",
        "--server",
        live_server.url,
        "--node",
        "gpu-a017",
        "--exporter",
        f"{exporter}/metrics",
        "--spool",
        str(tmp_path),
    )
    assert code == 0
    assert GPU.objects.get(node__hostname="gpu-a017", index=2).metrics["sm_clock_mhz"] == 1980
    node = Node.objects.get(hostname="gpu-a017")
    assert node.last_heartbeat_at is not None
    assert Spool(tmp_path).pending() == []


def test_buffers_while_the_server_is_down_then_delivers(live_server, exporter, token, tmp_path):
    down = f"http://127.0.0.1:{closed_port()}"
    for _ in range(3):
        agent(
            "once",
            "--server",
            down,
            "--node",
            "gpu-a017",
            "--exporter",
            f"{exporter}/metrics",
            "--spool",
            str(tmp_path),
        )
    assert len(Spool(tmp_path).pending()) == 3
    assert GPU.objects.get(node__hostname="gpu-a017", index=0).updated_at is None
    assert agent("flush", "--server", live_server.url, "--spool", str(tmp_path)) == 0
    assert Spool(tmp_path).pending() == []
    gpu = GPU.objects.get(node__hostname="gpu-a017", index=0)
    assert gpu.updated_at is not None and gpu.prev_at is not None  # all three scrapes landed


def test_a_4xx_is_set_aside_not_retried(live_server, exporter, token, tmp_path):
    agent(
        "once",
        "--server",
        live_server.url,
        "--node",
        "not-registered",
        "--exporter",
        f"{exporter}/metrics",
        "--spool",
        str(tmp_path),
    )
    spool = Spool(tmp_path)
    assert spool.pending() == []
    reasons = [p.read_text() for p in spool.rejected.glob("*.reason")]
    assert len(reasons) == 1 and "HTTP 400" in reasons[0] and "unknown node" in reasons[0]


class _Flaky(QuietHandler):
    """Answers 503 to the first two posts, then 202."""

    calls = 0

    def do_POST(self) -> None:  # noqa: N802
        type(self).calls += 1
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        reply(self, 503 if type(self).calls <= 2 else 202)


def test_5xx_is_retried_with_backoff(tmp_path):
    with LoopbackServer(_Flaky) as server:
        client = Client(server.url, "t")
        spool = Spool(tmp_path)
        spool.put("/api/v1/ingest/telemetry/", "{}", "application/json")
        assert client.drain(spool, now=0) == 0 and client.failures == 1
        assert client.not_before > 0
        assert client.drain(spool, now=client.not_before - 0.01) == 0  # still backing off
        assert _Flaky.calls == 1
        assert client.drain(spool, now=client.not_before) == 0 and client.failures == 2
        assert client.drain(spool, now=client.not_before) == 1 and client.failures == 0
        assert spool.pending() == [] and _Flaky.calls == 3
        assert client.send("/x", "{}", "application/json")[0] is Outcome.STORED


def probe(server: str, spool: Path, *extra: str) -> int:
    return agent("probe", "--server", server, "--node", "gpu-a017", "--spool", str(spool), *extra)


def test_probe_without_a_gpu_backend_reports_nothing(live_server, token, tmp_path, capsys):
    """No torch with CUDA here: a CPU figure must never be reported as a GPU's (it would make
    every GPU look slow and, against real GPUs' checksums, corrupt)."""
    assert probe(live_server.url, tmp_path) == 1
    assert "no GPU backend" in capsys.readouterr().out
    assert Spool(tmp_path).pending() == []
    gpus = GPU.objects.filter(node__hostname="gpu-a017")
    assert not any("gemm_tflops" in g.metrics or "gemm_checksum" in g.metrics for g in gpus)
    assert all(g.probe_at is None for g in gpus)


def test_probe_reports_each_gpus_own_figures(live_server, token, tmp_path, monkeypatch):
    figures = [
        ProbeResult("cuda:0", 610.5, 1234.25),
        ProbeResult("cuda:1", 598.0, 1234.25),
        ProbeResult("cuda:2", 20.0, 99.0),
    ]
    monkeypatch.setattr(kuae_probe, "_torch_probes", lambda n, repeats: figures)
    for _ in range(2):
        assert probe(live_server.url, tmp_path, "--gpus", "0-1") == 0
    gpus = list(
        GPU.objects.filter(node__hostname="gpu-a017", index__in=[0, 1, 2]).order_by("index")
    )
    assert [g.metrics.get("gemm_tflops") for g in gpus] == [610.5, 598.0, None]  # --gpus 0-1
    assert gpus[0].metrics["gemm_checksum"] == gpus[0].prev_metrics["gemm_checksum"] == 1234.25
    assert gpus[0].probe_at is not None and gpus[2].probe_at is None


def test_once_follows_the_kernel_log_and_sends_each_xid_once(
    live_server, exporter, token, tmp_path
):
    now = dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()
    log = tmp_path / "kern.log"
    log.write_text(
        f"{now} gpu-a017 kernel: NVRM: Xid (PCI:0000:48:00): 79, pid=2417, name=python3, "
        "GPU has fallen off the bus.\n"
        f"{now} gpu-a017 kernel: nvidia-nvswitch0: link up\n"
        f"{now} gpu-a017 kernel: NVRM: Xid (PCI:0000:18:00): 13, pid='<unknown>', "
        "name=<unknown>, Graphics SM Warp Exception on (GPC 7, TPC 1, SM 0)\n"
    )
    args = ["--server", live_server.url, "--node", "gpu-a017", "--exporter", f"{exporter}/metrics"]
    args += ["--spool", str(tmp_path / "spool"), "--kmsg-file", str(log)]
    assert agent("once", *args) == 0
    with log.open("a") as handle:
        handle.write(f"{now} gpu-a017 kernel: NVRM: Xid (PCI:0000:88:00): 48, Ch 0000000a\n")
    assert agent("once", *args) == 0  # a new process: resumes from its cursor
    assert agent("once", *args) == 0
    events = TelemetryEvent.objects.filter(source="kernel").order_by("code")
    assert [(e.code, e.gpu, e.pci_bus) for e in events] == [
        (13, 0, "0000:18:00.0"),  # placed by the exporter's pci_bus_id labels
        (48, 7, "0000:88:00.0"),
        (79, 3, "0000:48:00.0"),
    ]
    assert events[2].message == "pid=2417, name=python3, GPU has fallen off the bus."
    assert Spool(tmp_path / "spool").pending() == []


def test_nvidia_smi_csv():
    text = (
        "0, GPU-aa, NVIDIA H100 80GB HBM3, 97, 77890, 55, 48, 621.54, 1980, 00000000:18:00.0\n"
        "1, GPU-bb, NVIDIA H100 80GB HBM3, 0, 1, 33, [N/A], 70.1, 345, [N/A]\n"
    )
    ts = dt.datetime(2026, 11, 23, tzinfo=dt.UTC)
    samples = parse_smi_csv(text, node="n1", ts=ts)
    assert samples[0]["metrics"] == {
        "gpu_util": 97,
        "mem_used_mib": 77890,
        "temp_c": 55,
        "mem_temp_c": 48,
        "power_w": 621.54,
        "sm_clock_mhz": 1980,
    }
    assert "mem_temp_c" not in samples[1]["metrics"] and samples[1]["gpu"] == 1
    assert samples[0]["pci_bus"] == "00000000:18:00.0" and "pci_bus" not in samples[1]


def test_no_token_is_an_error(monkeypatch, tmp_path):
    monkeypatch.delenv("KUAE_TOKEN", raising=False)
    assert agent("flush", "--server", "http://127.0.0.1:1", "--spool", str(tmp_path)) == 2
