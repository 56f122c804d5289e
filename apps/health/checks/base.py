"""What a check plug-in declares (`CheckSpec`) and the context one run of it gets.

A check is one module in this package: its spec names its kind, the target it judges, the
incident categories it may open, the telemetry fields it needs from every GPU or NIC port
(`Needed.target`, for the "not reported" notices), the series it reads from a cluster's
Prometheus, the event kinds the intake accepts for it, its thresholds (`limits`: a dataclass
of its own module that extends `apps.health.thresholds.Shared`) and its loader (`run`), which
loads plain values and calls a pure detector. Everything else — the schedule, the
run-now choices, the thresholds form and the docs table, the pulls, the notices — is
derived from these declarations (docs/checks.md, Writing a check).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from apps.common.words import Words
from apps.fleet.models import Cluster
from apps.health import inputs
from apps.health.detectors.findings import GPU, Finding, TargetType
from apps.health.thresholds import Shared, declared
from apps.incidents.choices import Category
from apps.jobs.models import Job
from apps.maintenance.selectors import nodes_in_maintenance
from apps.telemetry.monitored import Needed

if TYPE_CHECKING:  # every plug-in's thresholds together, put together by the package
    from apps.health.checks import Limits
    from apps.telemetry.prometheus_source import PullPlan


@dataclass
class Context:
    """One run of one check over one cluster."""

    kind: str
    cluster: Cluster
    now: dt.datetime
    limits: Limits
    # What the run must write besides its findings (what it judged, for the next run): done
    # in the transaction that applies them, so a run that fails writes neither.
    writes: list[Callable[[], object]] = field(default_factory=list)
    # Targets the run passed unchanged without loading them (docs/checks.md, Candidates):
    # counted among the run's passes, nothing written for them.
    unchanged: int = 0

    @cached_property
    def jobs(self) -> list[Job]:
        """The cluster's running jobs, largest first."""
        return inputs.running_jobs(self.cluster)

    @cached_property
    def job_of_node(self) -> dict[str, int]:
        """hostname → the largest running job on it."""
        return inputs.job_of_node(self.jobs)

    @cached_property
    def in_maintenance(self) -> set[str]:
        """Hostnames of the cluster's nodes a maintenance window covers now: the checks skip
        them (docs/maintenance.md)."""
        return nodes_in_maintenance(self.cluster.pk, self.now)

    @cached_property
    def jobs_in_maintenance(self) -> set[int]:
        """Running jobs with a node under maintenance: the window stopped them (a planned
        interruption), so what their progress says is no finding."""
        if not self.in_maintenance:
            return set()
        return set(
            Job.nodes.through.objects.filter(
                job_id__in=[j.pk for j in self.jobs], node__hostname__in=self.in_maintenance
            ).values_list("job_id", flat=True)
        )

    def streaks(self, key: str) -> dict[str, int]:
        """target → the count under `key` that the previous run stored in its result
        (how many runs in a row a condition has held)."""
        return inputs.result_counts(self.cluster, self.kind, key)


def always_monitored(cluster: Cluster) -> Words | None:
    """A check whose inputs every cluster has: never "not monitored"."""
    return None


@dataclass(frozen=True)
class CheckSpec:
    """A check plug-in's declarations (see the module's docstring)."""

    kind: str
    label: Words
    # Where it is listed among the checks (the health page, the thresholds, the schedule).
    order: int
    target: TargetType
    categories: tuple[Category, ...]
    run: Callable[[Context], list[Finding]]
    # Fields every GPU (or NIC port, by `Needed.target`) must report for this check to judge
    # it; one that does not is "not checked", not passing (the node page says so).
    needs: tuple[Needed, ...] = ()
    # KUAE metric names this check judges, read from a cluster's Prometheus before each run
    # (empty: the check reads nothing there).
    pulls: frozenset[str] = frozenset()
    # How to pull them with the check's thresholds in the query, from what is stored
    # (docs/integrations.md, 2d: thresholds in the query); None from it, or no function: a
    # pull of every GPU's values.
    pull_plan: Callable[[Context], PullPlan | None] | None = None
    # Event kinds (name → what a person reads) the telemetry intake accepts for this check,
    # and what such an event belongs to.
    events: Mapping[str, Words] = field(default_factory=dict)
    event_target: TargetType = GPU
    # Event kinds that belong to the node itself (a GPU's PCI address, when one is given,
    # places them on that GPU): a driver's fault line that names no GPU index.
    node_events: Mapping[str, Words] = field(default_factory=dict)
    # Why a cluster's data cannot be judged by this check (None: it can): shown on the
    # health page instead of a pass.
    not_monitored: Callable[[Cluster], Words | None] = always_monitored
    interval_s: int = 60
    # False: declared and shown, but not run on the schedule until its inputs exist.
    scheduled: bool = True
    # Its thresholds: a frozen dataclass of its module extending `Shared`, whose own fields
    # are the check's (each a `threshold(..., check=kind)`).
    limits: type[Shared] = Shared

    @property
    def thresholds(self) -> tuple[dataclasses.Field[Any], ...]:
        """The thresholds this check declares (besides those every check shares)."""
        return declared(self.limits)


def skip_maintenance(findings: list[Finding], ctx: Context) -> list[Finding]:
    """The findings without those on nodes under maintenance (a node's or one of its GPUs')
    and those on jobs a window stopped: no result, no incident, no state change for them."""
    quiet, stopped = ctx.in_maintenance, ctx.jobs_in_maintenance
    if not quiet:
        return findings
    return [
        f
        for f in findings
        if not (f.node in quiet or (f.node is None and f.job is not None and f.job in stopped))
    ]
