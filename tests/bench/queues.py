"""Queues per cluster: how long a small cluster's check waits behind a big cluster's backlog,
with both on the shared queue and with the big cluster on a queue of its own — the same two
real Celery workers over the configured broker in both cases, measured in the same run."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the app modules are imported once Django is set up (see the end)
    from apps.fleet.models import Cluster
    from apps.health.models import CheckRun


@contextmanager
def _workers(*queues: str) -> Iterator[None]:
    """One solo-pool worker per name given (a name twice: two workers on that queue)."""
    from tests.test_celery_worker import worker

    with ExitStack() as stack:
        for queue in queues:
            stack.enter_context(worker(queue))
        time.sleep(3)  # connected and consuming before the clock starts
        yield


def _wait_done(runs: list[CheckRun], limit_s: float = 600) -> float:
    """Seconds until every run is done or errored (polled every 50 ms)."""
    from apps.health.choices import RunStatus
    from apps.health.models import CheckRun

    ids = [r.pk for r in runs]
    start = time.perf_counter()
    while time.perf_counter() - start < limit_s:
        waiting = CheckRun.objects.filter(
            pk__in=ids, status__in=[RunStatus.QUEUED, RunStatus.RUNNING]
        )
        if not waiting.exists():
            return time.perf_counter() - start
        time.sleep(0.05)
    raise TimeoutError(f"runs {ids} not done in {limit_s} s")


def _scenario(big: Cluster, small: Cluster, rounds: int) -> tuple[float, float]:
    """Queue `rounds` sweeps of every kind on the big cluster, then one heartbeat check on
    the small one: (seconds until the small one's check is done, until the backlog is)."""
    from apps.health.checks import SCHEDULED_KINDS
    from apps.health.services import runs_request

    _wait_done(runs_request(cluster=small, kinds=["heartbeat"], requested_by="bench"))  # warm
    kinds = list(SCHEDULED_KINDS) * rounds
    backlog = runs_request(cluster=big, kinds=kinds, requested_by="bench")
    start = time.perf_counter()
    mine = runs_request(cluster=small, kinds=["heartbeat"], requested_by="bench")
    small_s = _wait_done(mine)
    _wait_done(backlog)
    return small_s, time.perf_counter() - start


def bench_queues(big_name: str = "kuae-sim", rounds: int = 3) -> None:
    """Print the small cluster's wait behind the big one's backlog, shared queue vs own."""
    from apps.fleet.models import Cluster
    from apps.fleet.services import NodeSpec, cluster_create, nodes_register
    from apps.health.checks import SCHEDULED_KINDS
    from apps.incidents.models import Incident
    from kuaeweb.celery import app

    big = Cluster.objects.get(name=big_name)
    small = cluster_create(
        name=f"bench-small-{uuid.uuid4().hex[:6]}",
        gpu_model="H100",
        peak_tflops_per_gpu=989.4,
        gpus_per_node=8,
    )
    nodes_register(cluster=small, specs=[NodeSpec(hostname=f"{small.name}-{i}") for i in range(8)])
    shared, own = f"bench-{uuid.uuid4().hex[:8]}", f"bench-big-{uuid.uuid4().hex[:8]}"
    default = app.conf.task_default_queue
    app.conf.task_default_queue = shared
    try:
        print(
            f"\nQueues per cluster: one heartbeat check on an 8-node cluster, queued behind "
            f"{rounds} sweeps of every kind ({rounds * len(SCHEDULED_KINDS)} runs) on "
            f"{big.name}; two real workers (solo pool) over {app.conf.broker_url.split(':')[0]}"
        )
        Cluster.objects.filter(pk=big.pk).update(queue="")
        big.refresh_from_db()
        with _workers(shared, shared):
            shared_small, shared_all = _scenario(big, small, rounds)
        Cluster.objects.filter(pk=big.pk).update(queue=own)
        big.refresh_from_db()
        with _workers(shared, own):
            own_small, own_all = _scenario(big, small, rounds)
    finally:
        app.conf.task_default_queue = default
        Cluster.objects.filter(pk=big.pk).update(queue="")
        # The later parts (the weekly report, the scale part) expect one cluster.
        Incident.objects.filter(cluster=small).delete()
        small.nodes.all().delete()
        small.delete()
    print(
        f"  both on the shared queue (2 workers):      small cluster's check done after "
        f"{shared_small:.2f} s (backlog done after {shared_all:.2f} s)\n"
        f"  big cluster on its own queue (1 worker each): small cluster's check done after "
        f"{own_small:.2f} s (backlog done after {own_all:.2f} s)\n"
        f"  → the small cluster's check waits {shared_small / own_small:.1f}× less"
    )


if __name__ == "__main__":  # the queue figures alone: python -m tests.bench.queues [GPUS]
    import io
    import os
    import sys

    from tests.bench.run import DEFAULT_URL, django_ready

    django_ready(os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL))
    from django.core.management import call_command

    gpus = int(sys.argv[1]) if len(sys.argv) > 1 else 10240
    call_command("simulate", gpus=gpus, days=1, seed=1, stdout=io.StringIO(), stderr=io.StringIO())
    bench_queues()
