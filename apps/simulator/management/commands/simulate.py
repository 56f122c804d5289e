"""`manage.py simulate --gpus N --days D --seed S [--vendor V]`: a realistic, deterministic
history of a cluster of one vendor's GPUs, or of two models (docs/simulator.md)."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection
from django.utils import timezone

from apps.fleet.models import Cluster, Node
from apps.reports.availability_days import KEEP_DAYS, seal_days
from apps.simulator.accelerators import BY_VENDOR, FLEETS, MIXED, MIXED_MTHREADS, fleet_models
from apps.simulator.plan import make_plan
from apps.simulator.writer import cluster_wipe, write_plan


class Command(BaseCommand):
    help = (
        "Write a simulated cluster history (nodes, jobs, metrics, failures) through the services."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--gpus", type=int, default=1024)
        parser.add_argument("--days", type=float, default=14)
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--cluster", default="kuae-sim", help="cluster name (slug)")
        parser.add_argument(
            "--metric-interval",
            type=float,
            default=60.0,
            help="seconds between a job's job-wide samples (default 60)",
        )
        parser.add_argument(
            "--failure-rate",
            type=float,
            default=None,
            help="unexpected interruptions per node-day (default: Llama 3's, 419/(2048×54))",
        )
        parser.add_argument(
            "--vendor",
            choices=FLEETS,
            default="nvidia",
            help="the GPUs: "
            + ", ".join(f"{v} ({g.model})" for v, g in BY_VENDOR.items())
            + f", or {MIXED} (half the nodes H100, half MI300X) or {MIXED_MTHREADS} (half "
            "H100, half MTT S4000); default nvidia",
        )
        parser.add_argument(
            "--host-prefix",
            default="",
            help="put before every node name (r000n00), so two simulated clusters can share "
            "a database: hostnames are unique across clusters",
        )
        parser.add_argument(
            "--force", action="store_true", help="write even into a database holding real clusters"
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        if opts["gpus"] < 8 or opts["days"] <= 0 or opts["metric_interval"] < 1:
            raise CommandError("--gpus must be ≥ 8, --days > 0, --metric-interval ≥ 1")
        if opts["vendor"] not in FLEETS:
            raise CommandError(f"--vendor must be one of {', '.join(FLEETS)}")
        real = list(Cluster.objects.filter(simulated=False).values_list("name", flat=True))
        if real and not opts["force"]:
            raise CommandError(
                f"this database holds clusters simulate did not write ({', '.join(real[:5])}); "
                "use --force to add a simulated one anyway"
            )
        existing = Cluster.objects.filter(name=opts["cluster"]).first()
        if existing is not None:
            if not existing.simulated:
                raise CommandError(f"cluster {existing.name} is real; choose another --cluster")
            self.stderr.write(f"replacing simulated cluster {existing.name}")
            cluster_wipe(existing)
        started = time.perf_counter()
        end = timezone.now().replace(microsecond=0)
        plan = make_plan(
            gpus=opts["gpus"],
            days=opts["days"],
            seed=opts["seed"],
            end=end,
            failure_rate=opts["failure_rate"],
            fleet=opts["vendor"],
            prefix=opts["host_prefix"],
        )
        taken = Node.objects.filter(hostname__in=[plan.hostnames[0], plan.hostnames[-1]])
        if taken.exists():
            raise CommandError(
                f"another cluster already has a node named {taken.first()}; choose a --host-prefix"
            )
        cluster = write_plan(
            plan,
            cluster_name=opts["cluster"],
            interval_s=opts["metric_interval"],
            log=lambda msg: self.stderr.write(f"  {msg}"),
        )
        # The finished days' availability sums, as beat would have kept them over the days
        # simulated (docs/formulas.md, GPU availability), so the reports read them as a
        # running installation's do.
        sealed = seal_days(cluster=cluster, now=timezone.now(), limit=KEEP_DAYS)
        self.stderr.write(f"  {len(sealed)} finished days' availability summed")
        if connection.vendor == "postgresql":
            # The planner's statistics of the tables just filled: without them (autovacuum
            # off, or not round yet) a 100,000-GPU fleet's pages plan for a handful of rows
            # and sort on disk (docs/operations.md, From 10,000 to 100,000 GPUs).
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")
            self.stderr.write("  planner statistics gathered (ANALYZE)")
        models = (
            ""
            if opts["vendor"] == "nvidia"
            else f" ({' + '.join(g.model for g in fleet_models(opts['vendor']))})"
        )
        self.stdout.write(
            f"simulated {opts['cluster']}: {opts['gpus']} GPUs{models} × {opts['days']:g} days "
            f"in {time.perf_counter() - started:.1f} s"
        )
