"""A node's page read in Chinese with every card (docs/pages.md, Language): its GPUs, NIC
ports, Host card, checks and their evidence, charts (and their figures), GPU events, a
maintenance window, a repair, and Slurm's state and what was sent to it — no English but the
fleet's own data; the English page as it was."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.management import call_command
from django.utils import timezone

from apps.accounts.services import user_create_or_update
from apps.fleet.models import Cluster, Node
from apps.fleet.services import node_set_state
from apps.maintenance.services import Booking, window_book
from apps.repairs.services import repairs_sync
from apps.scheduler.models import SchedulerNode
from apps.telemetry.models import HostReading, Port, TelemetryEvent
from tests.i18n_check import english_words
from tests.i18n_data import stored_words
from tests.i18n_pages import chinese_page, english_left

pytestmark = pytest.mark.django_db


def _figure_words(figure: dict) -> list[str]:
    """What Plotly draws of a figure as text: its title, annotations, axis titles and tick
    words, and the names in its legend."""
    layout = figure.get("layout", {})
    texts = [
        (layout.get("title") or {}).get("text", "")
        if isinstance(layout.get("title"), dict)
        else layout.get("title") or ""
    ]
    texts += [a.get("text", "") for a in layout.get("annotations", [])]
    for key, axis in layout.items():
        if key.startswith(("xaxis", "yaxis")) and isinstance(axis, dict):
            title = axis.get("title")
            texts.append(title.get("text", "") if isinstance(title, dict) else title or "")
            texts += [str(t) for t in axis.get("ticktext", [])]
    texts += [
        d["name"] for d in figure.get("data", []) if d.get("showlegend", True) and d.get("name")
    ]
    return english_words(texts)


@pytest.fixture
def node(db) -> Node:  # noqa: ANN001
    """The simulated fleet's first node, with every card: Slurm's state and a drain sent to
    it (actuation on), a repair, a maintenance window ahead, ports (one DOWN, with gaps),
    host readings of each kind and an XID event."""
    call_command("simulate", gpus=16, days=2, seed=7)
    node = Node.objects.order_by("hostname").first()
    Cluster.objects.filter(pk=node.cluster_id).update(slurm_kind="cli", actuation="on")
    node.refresh_from_db()
    now = timezone.now()
    SchedulerNode.objects.update_or_create(
        node=node, defaults={"state": "idle+drain", "reason": "kuae #1: xid", "synced_at": now}
    )
    node_set_state(node=node, state="drained", reason="gpu_errors: XID 79", source="check")
    repairs_sync()
    start = now + dt.timedelta(days=1)
    window_book(
        booking=Booking(cluster=node.cluster, start=start, end=start + dt.timedelta(hours=2),
                        reason="swap PSU", nodes=[node.hostname]),
        by="otto",
    )  # fmt: skip
    Port.objects.create(
        node=node, device="mlx5_9", port=1, state="DOWN", phys_state="Polling", ts=now,
        counters={"link_downed": 3}, switch="leaf-01", switch_port="7",
    )  # fmt: skip
    for kind, subject, values in (
        ("memory", "mc0", {"ce_total": 5, "ue_total": 1}),
        ("filesystem", "/checkpoints", {"device": "nas:/ckpt", "fstype": "nfs4", "readonly": 1,
                                        "device_error": 0, "size_bytes": 2**42,
                                        "avail_bytes": 2**40}),
        ("pcie", "0000:17:00.0", {"role": "gpu", "link_width": 8, "max_link_width": 16,
                                  "link_speed_gts": 32, "max_link_speed_gts": 32,
                                  "aer_correctable_total": 2, "aer_nonfatal_total": 0,
                                  "aer_fatal_total": 0}),
        ("clock", "system", {"offset_s": 0.7, "synced": 0}),
    ):  # fmt: skip
        HostReading.objects.update_or_create(
            node=node, kind=kind, subject=subject,
            defaults={"values": values, "prev_values": values, "ts": now, "source": "agent"},
        )  # fmt: skip
    TelemetryEvent.objects.create(
        node=node, gpu=3, at=now, kind="xid", value=79, code=79, source="kernel",
        message="NVRM: Xid (PCI:0000:17:00): 79, pid=0",
    )  # fmt: skip
    TelemetryEvent.objects.create(node=node, gpu=None, pci_bus="0000:9a:00.0", at=now,
                                  kind="xid", value=999, code=999, source="kernel")  # fmt: skip
    return node


def test_a_node_page_with_every_card_reads_in_chinese(client, node):
    user = user_create_or_update(username="u", role="operator", password="pw", check_password=False)
    client.force_login(user)
    url = f"/nodes/{node.hostname}/"
    html = chinese_page(client, url)
    words = {*stored_words(), "nas:/ckpt", "nas"}  # a mount's device, kept in its reading
    assert not english_left(html, words), english_left(html, words)
    for heading in (
        "GPU 事件",
        "端口",
        "主机",
        "已下发 Slurm",
        "Slurm 中状态",
        "检查",
        "逐 GPU 遥测",
    ):
        assert heading in html, heading
    assert "重启节点" in html or "重置 GPU" in html  # the XID's recommended action
    evidence = chinese_page(client, f"/health/nodes/{node.hostname}/evidence/")
    assert not english_left(evidence, words), english_left(evidence, words)
    for chart in ("gpus", "ports"):
        for query in ("", "?range=1h", "?range=30d", "?start=2020-01-01T00:00"):
            response = client.get(
                f"/charts/nodes/{node.hostname}/{chart}.json{query}", HTTP_ACCEPT_LANGUAGE="zh-hans"
            )
            assert not _figure_words(response.json()), (chart, query)
    english = client.get(url).content.decode()
    for heading in (
        "GPU events",
        "Ports",
        "Host",
        "Sent to Slurm",
        "In Slurm",
        "Telemetry per GPU",
    ):
        assert heading in english, heading
