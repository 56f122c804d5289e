"""Set up the fault test's world in its own database: a cluster of 12 nodes, a running job,
an agent token, checks every few seconds. Prints one JSON line for the test.

Run as `python -m tests.faults.world` with DATABASE_URL pointing at the test's PostgreSQL;
`--check-interval S` sets the heartbeat check's interval (3 s), `--operator PASSWORD` adds an
operator who signs in as `fault-operator` and a reader's (manager's) API token.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kuaeweb.settings")


def main() -> None:
    """Create the world and print {token, job, nodes, silent} (and reader_token)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--check-interval", type=int, default=3)
    parser.add_argument("--operator", metavar="PASSWORD")
    args = parser.parse_args()
    import django

    django.setup()
    from django.utils import timezone

    from apps.accounts.services import token_issue, user_create_or_update
    from apps.fleet.services import NodeSpec, cluster_create, node_heartbeat, nodes_register
    from apps.health.models import CheckSchedule, Thresholds
    from apps.health.services import schedules_ensure
    from apps.jobs.services import job_create

    cluster = cluster_create(
        name="f1", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8
    )
    start = timezone.now() - dt.timedelta(days=1)
    nodes = nodes_register(
        cluster=cluster,
        specs=[NodeSpec(hostname=f"f{i:03d}", rack="r0", in_service_at=start) for i in range(12)],
    )
    job, _ = job_create(
        cluster=cluster,
        nodes=nodes[:4],
        name="fault-run",
        n_params=7e9,
        gpu_count=32,
        status="running",
        started_at=start,
    )
    node_heartbeat(node=nodes[-1])  # heard from once, then silent: the heartbeat check's case
    Thresholds.objects.update_or_create(cluster=cluster, defaults={"values": {"heartbeat_s": 4}})
    schedules_ensure()
    CheckSchedule.objects.filter(cluster=cluster).update(enabled=False)
    CheckSchedule.objects.filter(cluster=cluster, kind="heartbeat").update(
        enabled=True, interval_s=args.check_interval
    )
    agent = user_create_or_update(username="fault-agent", role="agent")
    world: dict[str, object] = {
        "token": token_issue(user=agent),
        "job": job.pk,
        "nodes": [n.hostname for n in nodes],
        "silent": nodes[-1].hostname,
    }
    if args.operator:
        user_create_or_update(username="fault-operator", role="operator", password=args.operator)
        reader = user_create_or_update(username="fault-manager", role="manager")
        world["reader_token"] = token_issue(user=reader)
    print(json.dumps(world))


if __name__ == "__main__":
    main()
