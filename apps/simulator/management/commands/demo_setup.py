"""`manage.py demo_setup`: the demo cluster and login that `make run` needs (KUAE_DEMO=1 only)."""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from apps.accounts.demo import DEMO_AUTHOR, DEMO_LOGINS, DEMO_PASSWORD, DEMO_REVIEWER
from apps.accounts.services import user_create_or_update
from apps.fleet.models import Cluster
from apps.simulator.nics import ports_setup

DEMO_USER = DEMO_LOGINS[0][0]
# Beside the NVIDIA cluster, a small one of Moore Threads GPUs, as the KUAE cluster runs, so
# the pages show a second vendor: its model, its MTLink (docs/simulator.md, The demo).
MTHREADS_CLUSTER = "kuae-mtt"
MTHREADS_GPUS = 64
NVIDIA_CLUSTER = "kuae-sim"
# And a mixed one: half its nodes H100, half MTT S4000, each GPU with its own vendor's
# telemetry, so the GPUs page and the overview show two models side by side.
MIXED_CLUSTER = "kuae-mix"
MIXED_GPUS = 64


class Command(BaseCommand):
    help = (
        "Simulate the demo clusters (NVIDIA, Moore Threads and one of both) if there are none, "
        "and create the demo logins."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--gpus", type=int, default=1024)
        parser.add_argument("--days", type=float, default=14)

    def handle(self, *args: Any, **opts: Any) -> None:
        if not settings.DEMO:
            raise CommandError("the demo exists only with KUAE_DEMO=1")
        if not Cluster.objects.exists():
            call_command(
                "simulate", gpus=opts["gpus"], days=opts["days"], seed=1, cluster=NVIDIA_CLUSTER
            )
            # Its nodes' NIC ports, so the `fabric` check has ports to judge.
            started = time.perf_counter()
            ports = ports_setup(
                cluster=Cluster.objects.get(name=NVIDIA_CLUSTER), now=timezone.now()
            )
            took = time.perf_counter() - started
            self.stderr.write(f"  {ports:,} NIC ports on {NVIDIA_CLUSTER} in {took:.2f} s")
            call_command(
                "simulate",
                gpus=MTHREADS_GPUS,
                days=opts["days"],
                seed=2,
                metric_interval=180,  # a coarser step series: `make run` starts in seconds
                vendor="mthreads",
                cluster=MTHREADS_CLUSTER,
                host_prefix="mt-",
            )
            call_command(
                "simulate",
                gpus=MIXED_GPUS,
                days=opts["days"],
                seed=3,
                metric_interval=180,
                vendor="mixed-mthreads",
                cluster=MIXED_CLUSTER,
                host_prefix="mx-",
            )
        else:
            self.stderr.write("demo cluster already there (delete var/ to start afresh)")
        # The demo's login is published (it is printed below): not held to the password policy.
        for username, role in DEMO_LOGINS:
            user_create_or_update(
                username=username, role=role, password=DEMO_PASSWORD, check_password=False
            )
        others = ", ".join(f"{u} ({r})" for u, r in DEMO_LOGINS[1:])
        self.stdout.write(
            f"demo login: {DEMO_USER} / {DEMO_PASSWORD} (role operator); also {others}, "
            f"password {DEMO_PASSWORD}. A postmortem {DEMO_AUTHOR} writes, {DEMO_REVIEWER} "
            "reviews."
        )
