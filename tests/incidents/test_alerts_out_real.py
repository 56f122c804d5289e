"""Alerts out against the real Alertmanager (Debian's `prometheus-alertmanager`) as an HA
pair — two processes gossiping over `--cluster.listen-address` / `--cluster.peer`
(docs/alertmanager.md, Alerts out): after a round both hold one alert per open incident;
with one stopped the outbox keeps its deliveries, and when it comes back on the same port
with empty storage (an Alertmanager keeps nothing else) every open alert is back."""

from __future__ import annotations

import datetime as dt
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.test import override_settings
from django.utils import timezone

from apps.incidents.alerts_out import alerts_out_tick
from apps.incidents.models import AlertPost, Incident
from tests.incidents.test_alertmanager_real import _binary, until
from tests.support import closed_port

pytestmark = pytest.mark.django_db


class Member:
    """One Alertmanager of the pair: its web and cluster ports stay the same across restarts."""

    def __init__(self, binary: str, base: Path, name: str) -> None:
        self.binary, self.base, self.name = binary, base, name
        self.port, self.cluster_port = closed_port(), closed_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = base / f"{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self, peer: Member) -> None:
        """Start with a fresh storage folder: nothing survives a restart."""
        self.starts += 1
        config = self.base / "alertmanager.yml"
        config.write_text("route:\n  receiver: none\nreceivers:\n  - name: none\n")
        self.proc = subprocess.Popen(
            [
                self.binary,
                f"--config.file={config}",
                f"--storage.path={self.base / f'{self.name}-data-{self.starts}'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                f"--cluster.listen-address=127.0.0.1:{self.cluster_port}",
                f"--cluster.peer=127.0.0.1:{peer.cluster_port}",
                "--cluster.settle-timeout=1s",
                "--cluster.peer-timeout=1s",
                "--cluster.gossip-interval=100ms",
                "--cluster.pushpull-interval=1s",
                "--log.level=debug",
            ],
            stdout=self.log.open("ab"),
            stderr=subprocess.STDOUT,
        )

    def ready(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            pytest.fail(f"{self.name} exited {self.proc.returncode}: {self.log.read_text()}")
        try:
            return httpx.get(f"{self.url}/-/ready", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def alerts(self) -> list[dict[str, Any]]:
        """The active alerts it holds (GET /api/v2/alerts)."""
        return httpx.get(f"{self.url}/api/v2/alerts", params={"active": "true"}, timeout=5).json()

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)


@pytest.fixture
def ha_pair(tmp_path: Path) -> Iterator[list[Member]]:
    """Two clustered Alertmanagers, each peering with the other."""
    binary = _binary()
    a, b = Member(binary, tmp_path, "am-a"), Member(binary, tmp_path, "am-b")
    try:
        a.start(b)
        b.start(a)
        for member in (a, b):
            until(member.ready, f"{member.name} ready", [a.log, b.log])
        yield [a, b]
    finally:
        a.stop()
        b.stop()


def _by_incident(member: Member) -> dict[str, dict[str, Any]]:
    """KUAE's alerts it holds, by their `incident` label."""
    return {
        alert["labels"]["incident"]: alert
        for alert in member.alerts()
        if alert["labels"].get("source") == "kuae"
    }


def test_an_ha_pair_holds_every_open_incident_and_a_restart_loses_nothing(ha_pair, cluster, nodes):  # noqa: ANN001
    a, b = ha_pair
    logs = [a.log, b.log]
    detected = timezone.now().replace(microsecond=0) - dt.timedelta(minutes=3)

    def incident(title: str, hosts: list[int], **fields: Any) -> Incident:
        values = {"category": "gpu", "severity": "sev1", **fields}
        made = Incident.objects.create(cluster=cluster, title=title, detected_at=detected, **values)
        made.nodes.set([nodes[i] for i in hosts])
        return made

    one = incident("XID 79 on gpu000", [0])
    two = incident("NIC flaps", [1, 2], severity="sev3", category="nic")
    incident("Fixed", [3], status="resolved")
    settings = {
        "KUAE_ALERTMANAGER_URL": [a.url, b.url],
        "KUAE_ALERTMANAGER_REPEAT_S": 60,
        "KUAE_BASE_URL": "https://kuae.example.com",
    }
    with override_settings(**settings):
        # The rounds' clock stays behind Alertmanager's, which decides what has ended.
        now = timezone.now() - dt.timedelta(seconds=90)
        assert alerts_out_tick(now=now) == {"new": 4, "sent": 4}
        for member in (a, b):
            held = until(lambda m=member: len(_by_incident(m)) == 2 and _by_incident(m), "", logs)
            assert set(held) == {str(one.pk), str(two.pk)}  # one alert per open incident
            first = held[str(one.pk)]
            assert first["labels"]["severity"] == "critical"
            assert first["labels"]["node"] == "gpu000"
            assert first["annotations"]["url"] == f"https://kuae.example.com/incidents/{one.pk}/"
            assert first["generatorURL"] == first["annotations"]["url"]
            assert first["status"]["state"] == "active"
            assert held[str(two.pk)]["labels"]["nodes_count"] == "2"
        assert a.alerts()[0]["fingerprint"] in {x["fingerprint"] for x in b.alerts()}

        b.stop()
        three = incident("HBM ECC on gpu004", [4], severity="sev2")
        now += dt.timedelta(seconds=15)
        assert alerts_out_tick(now=now) == {"new": 2, "sent": 1, "failed": 1}
        kept = AlertPost.objects.get(alertmanager=b.url, subject=f"incident:{three.pk}")
        assert kept.pending and kept.attempts == 1 and kept.error
        until(lambda: str(three.pk) in _by_incident(a), "am-a has the new alert", logs)

        b.start(a)  # the same port, empty storage
        until(b.ready, "am-b back", logs)
        assert _by_incident(b) == {}  # it kept nothing
        now += dt.timedelta(seconds=10)  # the retry is due; the others are not yet
        assert alerts_out_tick(now=now) == {"sent": 1}
        assert set(_by_incident(b)) == {str(three.pk)}
        now += dt.timedelta(seconds=35)  # one repeat period after the first round
        assert alerts_out_tick(now=now) == {"repeated": 4, "sent": 4}
        assert set(_by_incident(b)) == {str(one.pk), str(two.pk), str(three.pk)}
        assert not AlertPost.objects.filter(pending=True).exists()

        one.status = "resolved"
        one.save()
        now += dt.timedelta(seconds=3)
        assert alerts_out_tick(now=now) == {"ended": 2, "sent": 2}  # to each member
        for member in (a, b):
            until(lambda m=member: str(one.pk) not in _by_incident(m), "resolved", logs)
            assert set(_by_incident(member)) == {str(two.pk), str(three.pk)}
        assert not AlertPost.objects.filter(subject=f"incident:{one.pk}").exists()
