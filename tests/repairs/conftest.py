"""Four nodes of 8 GPUs, an operator, an engineer, an agent; helpers that drain a node, post
a GEMM probe and an XID through the API as the agents would."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.utils import timezone

from apps.fleet.models import Cluster, Node
from apps.fleet.services import NodeSpec, node_set_state, nodes_register


@pytest.fixture
def fleet(cluster: Cluster, api: Any) -> dict[str, Any]:
    start = timezone.now() - dt.timedelta(days=40)
    nodes = nodes_register(
        cluster=cluster,
        specs=[NodeSpec(hostname=f"n{i:02d}", rack="r0", in_service_at=start) for i in range(4)],
    )
    return {
        "nodes": nodes,
        "agent": api("ada"),
        "otto": api("otto"),
        "erin": api("erin"),
        "mia": api("mia"),
    }


def drain(
    hostname: str, reason: str = "XID 79: fallen off the bus", state: str = "drained"
) -> None:
    """Drain (or take down) the node as a check or an operator would."""
    node_set_state(node=Node.objects.get(hostname=hostname), state=state, reason=reason, by="otto")


def iso(when: dt.datetime) -> str:
    return when.isoformat().replace("+00:00", "Z")


def probe(
    agent: Any,
    hostname: str,
    *,
    tflops: float = 900.0,
    checksum: float = 1834.25,
    odd_gpu: int | None = None,
    odd_tflops: float | None = None,
    odd_checksum: float | None = None,
    gpus: int = 8,
    shift_s: float = 1.0,
) -> None:
    """The node's GEMM probe through the telemetry intake, a second ahead of now (so it is
    newer than a return requested a moment ago; `shift_s` moves it)."""
    ts = iso(timezone.now() + dt.timedelta(seconds=shift_s))
    samples = []
    for i in range(gpus):
        t, c = tflops, checksum
        if i == odd_gpu:
            t = odd_tflops if odd_tflops is not None else t
            c = odd_checksum if odd_checksum is not None else c
        samples.append(
            {
                "node": hostname,
                "gpu": i,
                "ts": ts,
                "metrics": {"gemm_tflops": t, "gemm_checksum": c},
            }
        )
    response = agent.post("/api/v1/ingest/telemetry/", {"samples": samples}, format="json")
    assert response.status_code == 202, response.content


def xid(agent: Any, hostname: str, code: int = 79, gpu: int = 3) -> None:
    """A kernel-log XID through the events intake, stamped a second ahead of now."""
    body = {
        "events": [
            {
                "node": hostname,
                "ts": iso(timezone.now() + dt.timedelta(seconds=1)),
                "kind": "xid",
                "code": code,
                "gpu": gpu,
            }
        ]
    }
    response = agent.post("/api/v1/ingest/events/", body, format="json")
    assert response.status_code == 202, response.content
