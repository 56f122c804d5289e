"""`thermal` with its thresholds in the query (docs/integrations.md, 2d: thresholds in the
query), against a real Prometheus (and VictoriaMetrics where installed) scraping a fake
dcgm-exporter: a cluster pulled that way and a twin cluster pulled whole (every GPU's values)
see the same exporter, their nodes' names aside, and after every run their results and run
counts are the same — a GPU that heats, one that cools, one that goes silent, a silent node,
a new node. A steady healthy fleet's answers are small and do not grow with 3x the GPUs."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.utils import timezone

from apps.fleet.models import GPU
from apps.fleet.services import NodeSpec, nodes_register
from apps.health import inputs
from apps.health.choices import RunStatus
from apps.health.models import CheckResult
from tests.binaries import CountingProxy, until
from tests.health.test_prometheus_real import (  # noqa: F401
    _allow_loopback,
    _cluster,
    _run,
    exposition,
    stack,
)

pytestmark = pytest.mark.django_db(transaction=True)
TEMP, MEM = "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP"


def _text(hosts: list[str], values: dict[tuple[str, str, int], float], silent: set) -> str:
    """`exposition` without the lines of the (host, gpu) pairs in `silent`."""
    return "".join(
        line + "\n"
        for line in exposition(hosts, values).splitlines()
        if not any(f'gpu="{g}",' in line and f'Hostname="{h}"' in line for h, g in silent)
    )


def _results(cluster: Any, prefix: str) -> dict[str, tuple[str, str, dict]]:
    rows = CheckResult.objects.filter(cluster=cluster, kind="thermal").exclude(target="source")
    return {
        r.target.replace(prefix, "X"): (r.status, r.message, r.details)
        for r in rows
        if r.target.startswith("gpu:")
    }


def _stale(cluster: Any) -> None:
    """Every value an hour old: only what the next pull reads or marks is fresh again."""
    GPU.objects.filter(node__cluster=cluster).update(
        updated_at=timezone.now() - dt.timedelta(hours=1)
    )


def test_thresholds_in_the_query_give_the_whole_pulls_verdicts(
    stack: dict[str, Any],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    proxy: CountingProxy = stack["proxy"]
    server = stack["server"]
    push = [f"pa-{i:03d}" for i in range(1, 5)]
    whole = [f"pb-{i:03d}" for i in range(1, 5)]
    a = _cluster("push", push, proxy.url)
    b = _cluster("whole", whole, proxy.url)

    def expose(values: dict[tuple[str, int], float], field: dict, silent: set, hosts: int) -> None:
        both = {}
        for (host, gpu), value in values.items():
            for prefix in ("pa-", "pb-"):
                both[(field[(host, gpu)], prefix + host, gpu)] = value
        stack["exporter"].text = _text(
            push[:hosts] + whole[:hosts],
            both,
            {(p + h, g) for h, g in silent for p in ("pa-", "pb-")},
        )

    def scraped(query: str, expect: float | None) -> None:
        def check() -> bool:
            rows = server.value(query)
            return not rows if expect is None else any(float(r["value"][1]) == expect for r in rows)

        until(check, f"{query} scraped as {expect}", [server.log])

    def step(stale: bool = False) -> tuple[int, int]:
        """One run of each cluster; the same results. (requests, bytes) of the pushdown's."""
        if stale:
            _stale(a)
            _stale(b)
        proxy.requests.clear()
        proxy.sizes.clear()
        ran = _run(a, "thermal")
        asked = (len(proxy.requests), sum(proxy.sizes))
        with monkeypatch.context() as m:
            m.setattr(inputs, "READ_NODES_MAX", -1)  # every GPU's values, as before
            reference = _run(b, "thermal")
        assert ran.status == reference.status == RunStatus.DONE, (ran.error, reference.error)
        assert ran.counts == reference.counts
        assert _results(a, "gpu:pa-") == _results(b, "gpu:pb-")
        return asked

    hot = {("001", 3): 93.0, ("002", 1): 97.0}
    fields = {("001", 3): TEMP, ("002", 1): MEM, ("003", 5): TEMP}
    expose(hot, fields, set(), 4)
    scraped(f'{MEM}{{Hostname="pb-002",gpu="1"}}', 97)
    step()  # first run: every GPU read
    step()  # the hot ones warn
    assert CheckResult.objects.get(cluster=a, kind="thermal", target="gpu:pa-001/3").status == (
        "warn"
    )
    # Steady: the warning GPUs' nodes and the offenders read, the others marked.
    requests, _ = step()
    assert requests == 3

    # GPU 3 of node 1 cools, GPU 5 of node 3 heats, GPU 6 of node 2 and node 4 go silent.
    changed = {("001", 3): 60.0, ("002", 1): 97.0, ("003", 5): 92.0}
    expose(changed, fields, {("002", 6)} | {("004", g) for g in range(8)}, 4)
    scraped(f'{TEMP}{{Hostname="pb-003",gpu="5"}}', 92)
    scraped(f'{TEMP}{{Hostname="pb-004"}}', None)
    scraped(f'{TEMP}{{Hostname="pb-002",gpu="6"}}', None)
    step(stale=True)
    step(stale=True)
    cooled = CheckResult.objects.get(cluster=a, kind="thermal", target="gpu:pa-001/3")
    assert cooled.status == "pass" and cooled.details["temp_c"] == 60
    heated = CheckResult.objects.get(cluster=a, kind="thermal", target="gpu:pa-003/5")
    assert heated.status == "warn" and "92" in heated.message
    assert not GPU.objects.filter(
        node__hostname="pa-004", updated_at__gte=timezone.now() - dt.timedelta(minutes=5)
    ).exists()  # silent: not marked as reporting

    # A new node: no result yet, so read.
    for cluster, prefix in ((a, "pa-"), (b, "pb-")):
        nodes_register(cluster=cluster, specs=[NodeSpec(hostname=f"{prefix}005", rack="r1")])
    push.append("pa-005")
    whole.append("pb-005")
    expose(changed, fields, {("002", 6)} | {("004", g) for g in range(8)}, 5)
    scraped(f'{TEMP}{{Hostname="pb-005",gpu="7"}}', 63)
    step()
    assert (
        CheckResult.objects.filter(
            cluster=a, kind="thermal", target__startswith="gpu:pa-005/"
        ).count()
        == 8
    )


def test_a_steady_healthy_fleets_answers_do_not_grow_with_it(
    stack: dict[str, Any],  # noqa: F811
) -> None:
    proxy: CountingProxy = stack["proxy"]
    server = stack["server"]
    small = [f"ps-{i:02d}" for i in range(4)]
    large = [f"pl-{i:02d}" for i in range(12)]
    stack["exporter"].text = exposition(small + large, {})
    until(lambda: server.value(f'{TEMP}{{Hostname="pl-11",gpu="7"}}'), "scraped", [server.log])
    sizes = {}
    for name, hosts in (("small", small), ("large", large)):
        cluster = _cluster(name, hosts, proxy.url)
        first = _run(cluster, "thermal")
        assert first.status == RunStatus.DONE, first.error
        proxy.sizes.clear()
        proxy.requests.clear()
        steady = _run(cluster, "thermal")
        assert steady.status == RunStatus.DONE, steady.error
        assert steady.counts["pass"] == 8 * len(hosts) + 1
        # a count per node and an empty list of offenders; no node to read by name
        assert len(proxy.requests) == 2
        sizes[name] = sum(proxy.sizes)
        fresh = GPU.objects.filter(node__cluster=cluster, updated_at__gte=steady.started_at)
        assert fresh.count() == 8 * len(hosts)  # every GPU marked as reporting
    # The count per node grows by one short series per node; nothing per GPU.
    per_node = (sizes["large"] - sizes["small"]) / (len(large) - len(small))
    assert per_node < 200, sizes
    assert sizes["small"] < 2_000, sizes
