"""`kuae-agent --fabric`: the ports read from a fake sysfs tree laid out as the kernel lays it
out, and the batch the agent sends taken in by the real server."""

from __future__ import annotations

import datetime as dt
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import kuae_agent
from apps.accounts.services import token_issue, user_create_or_update
from apps.fleet.models import GPU
from apps.fleet.services import NodeSpec, nodes_register
from apps.telemetry.models import Port
from kuae_agent.cli import main
from kuae_agent.fabric import FabricReader
from kuae_agent.spool import Spool

TS = dt.datetime(2026, 11, 23, 8, 0, tzinfo=dt.UTC)
IB_COUNTERS = {
    "link_downed": 1,
    "link_error_recovery": 3,
    "symbol_error": 0,
    "port_rcv_errors": 7,
    "port_xmit_discards": 12,
    "local_link_integrity_errors": 0,
    "excessive_buffer_overrun_errors": 0,
    "port_rcv_remote_physical_errors": 0,
    "port_xmit_wait": 2**40 + 5,
    # not among the fabric's counters: never sent
    "port_rcv_data": 123456789,
    "port_xmit_packets": 42,
}


def _write(folder: Path, files: dict[str, object]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, value in files.items():
        (folder / name).write_text(f"{value}\n")


def _device(sysfs: Path, name: str, pci: str) -> Path:
    """A device folder under devices/…/infiniband/, linked from class/infiniband/ as the
    kernel links it."""
    real = sysfs / "devices" / "pci0000:00" / pci / "infiniband" / name
    real.mkdir(parents=True)
    (real / "node_type").write_text("1: CA\n")
    link = sysfs / "class" / "infiniband" / name
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(real)
    return real


def _port(device: Path, port: int, files: dict[str, object]) -> Path:
    folder = device / "ports" / str(port)
    _write(folder, files)
    (folder / "gids").mkdir()
    return folder


@pytest.fixture
def sysfs(tmp_path: Path) -> Path:
    """An InfiniBand HCA with an active port, a second HCA with a DOWN port (no hw_counters,
    a garbage and an unreadable counter) and a port in Phy Test, and a RoCE NIC."""
    root = tmp_path / "sys"
    ib0 = _device(root, "mlx5_0", "0000:18:00.0")
    p = _port(ib0, 1, {"state": "4: ACTIVE", "phys_state": "5: LinkUp", "lid": "0x12"})
    _write(p, {"rate": "400 Gb/sec (4X NDR)", "link_layer": "InfiniBand"})
    _write(p / "counters", IB_COUNTERS)
    _write(p / "hw_counters", {"rnr_nak_retry_err": 0, "local_ack_timeout_err": 4})
    _write(p / "hw_counters", {"out_of_sequence": 9, "duplicate_request": 1})

    ib1 = _device(root, "mlx5_1", "0000:2a:00.0")
    down = _port(ib1, 1, {"state": "1: DOWN", "phys_state": "3: Disabled", "rate": "10 Gb/sec"})
    _write(down, {"link_layer": "InfiniBand"})
    _write(down / "counters", {"link_downed": 255, "symbol_error": "N/A", "port_xmit_wait": -1})
    (down / "counters" / "port_rcv_errors").mkdir()  # cannot be read as a file
    test = _port(ib1, 2, {"state": "2: INIT", "phys_state": "7: Phy Test", "link_layer": "x"})
    (test / "rate").mkdir()  # unreadable: left out
    _write(test / "counters", {"link_error_recovery": 2**64})  # past 64 bits: left out

    roce = _device(root, "mlx5_bond_0", "0000:9a:00.0")
    p = _port(roce, 1, {"state": "4: ACTIVE", "phys_state": "5: LinkUp", "link_layer": "Ethernet"})
    _write(p, {"rate": "200 Gb/sec (2X NDR)"})
    _write(p / "counters", {"port_rcv_errors": 0, "port_xmit_discards": 3, "link_downed": 0})
    _write(p / "hw_counters", {"rnr_nak_retry_err": 17, "local_ack_timeout_err": 0})
    return root


def _item(device: str, port: int, metrics: dict[str, object]) -> dict[str, object]:
    return {"node": "gpu-a017", "device": device, "port": port, "ts": "2026-11-23T08:00:00Z"} | {
        "metrics": metrics
    }


def test_reads_each_port_as_the_server_takes_it(sysfs):
    ports = FabricReader(sysfs).read(node="gpu-a017", ts=TS)
    wanted = {
        k: v for k, v in IB_COUNTERS.items() if k not in ("port_rcv_data", "port_xmit_packets")
    }
    assert ports == [
        _item(
            "mlx5_0",
            1,
            {"state": "ACTIVE", "phys_state": "LinkUp", "rate_gbps": 400.0}
            | wanted
            | {"rnr_nak_retry_err": 0, "local_ack_timeout_err": 4},
        ),
        _item(
            "mlx5_1",
            1,
            {"state": "DOWN", "phys_state": "Disabled", "rate_gbps": 10.0, "link_downed": 255},
        ),
        _item("mlx5_1", 2, {"state": "INIT", "phys_state": "PhyTest"}),
        _item(
            "mlx5_bond_0",
            1,
            {
                "state": "ACTIVE",
                "phys_state": "LinkUp",
                "rate_gbps": 200.0,
                "link_downed": 0,
                "port_rcv_errors": 0,
                "port_xmit_discards": 3,
                "rnr_nak_retry_err": 17,
                "local_ack_timeout_err": 0,
            },
        ),
    ]


@pytest.mark.django_db
def test_a_state_the_kernel_adds_is_sent_by_its_name_and_stored(tmp_path, api, nodes):
    """sysfs's `5: ACTIVE_DEFER` (and a state no table knows yet) was left out of the port's
    reading: it is sent as the kernel names it, and the server stores it, not ACTIVE."""
    device = _device(tmp_path, "mlx5_0", "0000:18:00.0")
    _port(device, 1, {"state": "5: ACTIVE_DEFER", "phys_state": "5: LinkUp"})
    _port(device, 2, {"state": "6: SOMETHING_NEWER\x07", "phys_state": "0: <unknown>"})
    _port(device, 3, {"state": "4: ACTIVE", "phys_state": "5: LinkUp"})
    ports = FabricReader(tmp_path).read(node="gpu000", ts=TS)
    assert [p["metrics"] for p in ports] == [
        {"state": "ACTIVE_DEFER", "phys_state": "LinkUp"},
        {"state": "SOMETHING_NEWER?", "phys_state": "<unknown>"},
        {"state": "ACTIVE", "phys_state": "LinkUp"},
    ]
    response = api("ada").post("/api/v1/ingest/telemetry/", {"ports": ports}, format="json")
    assert response.status_code == 202 and response.json()["ports"] == 3, response.content
    stored = Port.objects.filter(node__hostname="gpu000").order_by("port")
    assert list(stored.values_list("state", flat=True)) == [
        "ACTIVE_DEFER",
        "SOMETHING_NEWER?",
        "ACTIVE",
    ]


def test_no_infiniband_is_said_once_and_sends_nothing(tmp_path, caplog):
    reader = FabricReader(tmp_path / "sys")
    (tmp_path / "sys" / "class").mkdir(parents=True)
    with caplog.at_level(logging.WARNING, logger="kuae_agent"):
        assert reader.read(node="n", ts=TS) == []
        assert reader.read(node="n", ts=TS) == []
    said = [r.getMessage() for r in caplog.records if "fabric" in r.getMessage()]
    assert said == [f"fabric: no InfiniBand or RoCE ports under {reader.root}; none sent"]


def test_at_most_64_ports_in_port_number_order(tmp_path, caplog):
    device = _device(tmp_path, "mlx5_0", "0000:18:00.0")
    for port in range(1, 71):
        _port(device, port, {"state": "4: ACTIVE"})
    (device / "ports" / "not-a-port").mkdir()
    reader = FabricReader(tmp_path)
    with caplog.at_level(logging.WARNING, logger="kuae_agent"):
        ports = reader.read(node="n", ts=TS)
        reader.read(node="n", ts=TS)
    assert [p["port"] for p in ports] == list(range(1, 65))
    assert [r.getMessage() for r in caplog.records] == ["fabric: 70 ports, only the first 64 sent"]


@pytest.fixture
def token(cluster, monkeypatch) -> str:  # noqa: ANN001
    nodes_register(cluster=cluster, specs=[NodeSpec(hostname="gpu-a017")])
    raw = token_issue(user=user_create_or_update(username="agent-1", role="agent"))
    monkeypatch.setenv("KUAE_TOKEN", raw)
    return raw


def _once(server: str, exporter: str, spool: Path, *extra: str) -> int:
    args = ["once", "--server", server, "--node", "gpu-a017", "--exporter", f"{exporter}/metrics"]
    return main([*args, "--spool", str(spool), *extra])


@pytest.mark.django_db(transaction=True)
def test_the_agents_ports_are_taken_in_by_the_server(live_server, exporter, token, sysfs, tmp_path):
    spool = tmp_path / "spool"
    assert _once(live_server.url, exporter, spool, "--fabric", "--sysfs", str(sysfs)) == 0
    assert Spool(spool).pending() == [] and list(Spool(spool).rejected.iterdir()) == []
    ports = {(p.device, p.port): p for p in Port.objects.filter(node__hostname="gpu-a017")}
    assert sorted(ports) == [("mlx5_0", 1), ("mlx5_1", 1), ("mlx5_1", 2), ("mlx5_bond_0", 1)]
    ib, down, roce = ports["mlx5_0", 1], ports["mlx5_1", 1], ports["mlx5_bond_0", 1]
    assert (ib.state, ib.phys_state, ib.rate_gbps) == ("ACTIVE", "LinkUp", 400.0)
    assert ib.counters["port_xmit_wait"] == 2**40 + 5 and "port_rcv_data" not in ib.counters
    assert (down.state, down.phys_state, down.counters) == (
        "DOWN",
        "Disabled",
        {"link_downed": 255},
    )
    assert ports["mlx5_1", 2].phys_state == "PhyTest"
    assert (roce.state, roce.counters["rnr_nak_retry_err"]) == ("ACTIVE", 17)
    # the GPUs' telemetry came as before, in its own batch
    assert GPU.objects.get(node__hostname="gpu-a017", index=2).metrics["sm_clock_mhz"] == 1980

    # a second round: the counters' growth is there to be seen
    (sysfs / "class/infiniband/mlx5_1/ports/1/counters/link_downed").write_text("256\n")
    assert _once(live_server.url, exporter, spool, "--fabric", "--sysfs", str(sysfs)) == 0
    down.refresh_from_db()
    assert (down.prev_counters["link_downed"], down.counters["link_downed"]) == (255, 256)


@pytest.mark.django_db(transaction=True)
def test_without_infiniband_the_gpus_are_still_reported(
    live_server, exporter, token, tmp_path, caplog
):
    spool = tmp_path / "spool"
    with caplog.at_level(logging.WARNING, logger="kuae_agent"):
        code = _once(live_server.url, exporter, spool, "--fabric", "--sysfs", str(tmp_path))
    assert code == 0
    assert GPU.objects.get(node__hostname="gpu-a017", index=2).metrics["sm_clock_mhz"] == 1980
    assert not Port.objects.exists()
    assert [r.getMessage() for r in caplog.records if "fabric" in r.getMessage()] == [
        f"fabric: no InfiniBand or RoCE ports under {tmp_path / 'class/infiniband'}; none sent"
    ]
    assert Spool(spool).pending() == []


@pytest.mark.django_db(transaction=True)
def test_run_sends_the_ports_every_round_and_says_no_ports_once(
    live_server, exporter, token, sysfs, tmp_path
):
    """`kuae-agent run --fabric` as a service runs it: a process of its own, until SIGTERM."""
    agent_dir = Path(kuae_agent.__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(agent_dir), "KUAE_TOKEN": token}
    args = ["run", "--server", live_server.url, "--node", "gpu-a017", "--interval", "0.2"]
    args += ["--exporter", f"{exporter}/metrics", "--fabric"]

    def run(root: Path, spool: str, two_rounds_in: Callable[[], bool]) -> str:
        command = [sys.executable, "-m", "kuae_agent.cli", *args, "--sysfs", str(root)]
        proc = subprocess.Popen(
            [*command, "--spool", str(tmp_path / spool)], env=env, stderr=subprocess.PIPE, text=True
        )
        try:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and not two_rounds_in():
                time.sleep(0.2)
        finally:
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=20)
        assert proc.returncode == 0, err
        return err

    def ports_twice() -> bool:
        port = Port.objects.filter(node__hostname="gpu-a017", device="mlx5_bond_0").first()
        return port is not None and port.prev_ts is not None

    def gpus_twice() -> bool:
        return GPU.objects.get(node__hostname="gpu-a017", index=2).prev_at is not None

    run(sysfs, "spool-a", ports_twice)
    roce = Port.objects.get(node__hostname="gpu-a017", device="mlx5_bond_0", port=1)
    assert roce.counters["rnr_nak_retry_err"] == 17 and roce.prev_ts < roce.ts

    GPU.objects.filter(node__hostname="gpu-a017").update(updated_at=None, prev_at=None)
    err = run(tmp_path / "empty", "spool-b", gpus_twice)  # no class/infiniband at all
    assert gpus_twice() and err.count("no InfiniBand or RoCE ports") == 1, err
