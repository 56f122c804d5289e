"""The real Alertmanager (Debian's `prometheus-alertmanager`) delivering to this app over
HTTP: two independent instances (each notification arrives twice, as from an HA pair),
authenticated with `authorization` (Bearer, Alertmanager's default) and an agent token;
one group holding a known node, a node named by its FQDN and `host:port`, and a host
nobody registered; then a resolution. Alertmanager must never count a failed
notification, which is what a 4xx for the stray host used to cost: the whole group."""

from __future__ import annotations

import datetime as dt
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from apps.accounts.services import token_issue
from apps.fleet.services import NodeSpec, nodes_register
from apps.incidents.models import Incident, UnroutedAlert
from tests.binaries import debian_binary, until
from tests.support import closed_port

pytestmark = pytest.mark.django_db(transaction=True)


def _binary() -> str:
    return debian_binary(
        "prometheus-alertmanager", "alertmanager", package="prometheus-alertmanager"
    )


class Alertmanager:
    """One Alertmanager on a free loopback port, clustering off, its log in a file."""

    def __init__(self, binary: str, base: Path, name: str, receiver_url: str, token: Path):
        base.mkdir()
        self.port = closed_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = base / f"{name}.log"
        config = base / "alertmanager.yml"
        config.write_text(
            f"""
route:
  receiver: kuae
  group_by: ['job']
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: kuae
    webhook_configs:
      - url: {receiver_url}
        send_resolved: true
        max_alerts: 1000
        http_config:
          authorization:
            credentials_file: {token}
"""
        )
        self.proc = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.path={base / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--cluster.listen-address=",
                "--log.level=debug",
            ],
            stdout=self.log.open("wb"),
            stderr=subprocess.STDOUT,
        )

    def ready(self) -> bool:
        if self.proc.poll() is not None:
            pytest.fail(f"alertmanager exited {self.proc.returncode}: {self.log.read_text()}")
        try:
            return httpx.get(f"{self.url}/-/ready", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def post(self, alerts: list[dict[str, Any]]) -> None:
        response = httpx.post(f"{self.url}/api/v2/alerts", json=alerts, timeout=5)
        assert response.status_code == 200, response.text

    def fingerprints(self) -> dict[str, str]:
        """alertname → fingerprint, as Alertmanager computed them."""
        alerts = httpx.get(f"{self.url}/api/v2/alerts", timeout=5).json()
        return {a["labels"]["alertname"]: a["fingerprint"] for a in alerts}

    def webhook_metric(self, name: str) -> float:
        """Sum of `name` over the webhook integration, from Alertmanager's own /metrics."""
        text = httpx.get(f"{self.url}/metrics", timeout=5).text
        return sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith(name + "{") and 'integration="webhook"' in line
        )

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)


@pytest.fixture
def pair(live_server, users, cluster, tmp_path) -> Iterator[list[Alertmanager]]:  # noqa: ANN001
    """Two Alertmanagers, not clustered, both sending to this app with ada's token."""
    binary = _binary()
    token = tmp_path / "agent_token"
    token.write_text(token_issue(user=users["ada"]) + "\n")
    url = f"{live_server.url}/api/v1/ingest/alertmanager/"
    managers = []
    try:
        for name in ("am-a", "am-b"):
            managers.append(Alertmanager(binary, tmp_path / name, name, url, token))
        for am in managers:
            until(am.ready, f"{am.log.stem} ready", [am.log])
        yield managers
    finally:
        for am in managers:
            am.stop()


def _alert(name: str, starts: dt.datetime, **labels: str) -> dict[str, Any]:
    """An alert as Prometheus posts it (no endsAt: Alertmanager sends "0001-01-01…")."""
    return {
        "labels": {"alertname": name, "job": "dcgm", **labels},
        "annotations": {"summary": f"{name} on {labels.get('Hostname') or labels['instance']}"},
        "startsAt": starts.isoformat(),
    }


def test_real_alertmanager_pair_delivers_to_the_app(pair, cluster):
    nodes_register(
        cluster=cluster,
        specs=[
            NodeSpec(hostname="gpu-c001"),
            NodeSpec(hostname="gpu-c002", addresses=("10.20.0.2",)),
        ],
    )
    started = (dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1)).replace(microsecond=0)
    xid = _alert(
        "GpuXidError",
        started,
        Hostname="gpu-c001",
        gpu="2",
        UUID="GPU-0f0e0d0c-1111-2222-3333-444455556666",
        xid="94",
        severity="critical",
    )
    down = _alert("NodeDown", started, instance="gpu-c002.dc1.example.com:9100", severity="warning")
    stray = _alert("GpuThermal", started, Hostname="gpu-nowhere-9", severity="warning")
    for am in pair:
        am.post([xid, down, stray])
    logs = [am.log for am in pair]
    prints = until(
        lambda: len(pair[0].fingerprints()) == 3 and pair[0].fingerprints(), "the alerts", logs
    )
    assert pair[1].fingerprints() == prints  # the same alert has the same fingerprint

    def opened() -> bool:
        return Incident.objects.count() >= 2 and UnroutedAlert.objects.exists()

    until(opened, "the incidents and the unrouted alert", logs)
    incidents = {i.fingerprint: i for i in Incident.objects.all()}
    assert set(incidents) == {f"am:{prints['GpuXidError']}", f"am:{prints['NodeDown']}"}
    gpu = incidents[f"am:{prints['GpuXidError']}"]
    assert (gpu.category, gpu.severity, gpu.status) == ("gpu_hbm", "sev1", "open")
    assert list(gpu.nodes.values_list("hostname", flat=True)) == ["gpu-c001"]
    assert gpu.details["gpu"] == "2" and gpu.details["gpu_uuid"].startswith("GPU-0f0e")
    node = incidents[f"am:{prints['NodeDown']}"]
    assert node.category == "node_unreachable"
    assert list(node.nodes.values_list("hostname", flat=True)) == ["gpu-c002"]
    unrouted = UnroutedAlert.objects.get()
    assert unrouted.fingerprint == prints["GpuThermal"]
    assert unrouted.labels["Hostname"] == "gpu-nowhere-9"

    resolved_at = dt.datetime.now(dt.UTC).replace(microsecond=0)
    for am in pair:
        am.post([{**down, "endsAt": resolved_at.isoformat()}])

    def resolved() -> bool:
        node.refresh_from_db()
        return node.status == "resolved"

    until(resolved, "the NodeDown incident resolved", logs)
    for am in pair:
        until(
            lambda am=am: am.webhook_metric("alertmanager_notifications_total") >= 2,
            f"{am.log.stem}: two notifications sent",
            logs,
        )
        assert am.webhook_metric("alertmanager_notifications_failed_total") == 0
    assert Incident.objects.count() == 2  # both instances delivered; one incident each
    assert node.resolved_at == resolved_at
    assert UnroutedAlert.objects.get().deliveries >= 2
    gpu.refresh_from_db()
    assert gpu.status == "open"
