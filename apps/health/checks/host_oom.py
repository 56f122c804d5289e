"""`host_oom`: processes the kernel's out-of-memory killer ended on a node, from the
`oom_kill` counter of its `/proc/vmstat` (docs/checks.md, `host_oom`).

A rank the OOM killer ends is a crashed job that reports nothing of why; a data loader's
workers killed one by one are a job that slows and then dies. Any kill within the hour
(more than `host_oom_kills_per_hour`) warns, naming how many, until the hour has passed. It
changes no node's state and opens a `software_bug` incident: host memory running out is most
often the job's own doing (too many loader workers, a pinned-memory leak), not the node's.
A cluster whose nodes never reported the counter shows the check as "Not monitored" —
never a pass.

One module, as docs/checks.md's "Writing a check" says: its thresholds, detector and loader
are all here; its reading kind (`vmstat`) is declared in apps/telemetry/host_kinds.py.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.translation import gettext_lazy as _

from apps.health.checks.base import CheckSpec, Context
from apps.health.detectors.findings import (
    NODE,
    Finding,
    Outcome,
    node_target,
    passed,
    warned,
)
from apps.health.detectors.host_counters import HostHistory, hourly, not_reported, unread
from apps.health.host_readings import Unchanged, host_histories, unless_reported
from apps.health.thresholds import Shared, threshold
from apps.incidents.choices import Category, Severity
from apps.telemetry.host_series import pull_name

KIND, LABEL = "host_oom", _("Out-of-memory kills")
READING = "vmstat"  # the kind of host reading it judges
COUNTER = "oom_kill_total"
QUIET = "no out-of-memory kill within the hour"  # a node's pass, its counter reported
# Its own category among the checks', so that no other check's pass resolves its incident.
KILLED = Outcome(Category.SOFTWARE_BUG, Severity.SEV3)
NOT_MONITORED = _(
    "no node of this cluster has reported its out-of-memory kills (host readings: "
    "kuae-agent run --host, or node_exporter's vmstat collector)"
)


@dataclass(frozen=True)
class HostOomLimits(Shared):
    """The out-of-memory check's thresholds (docs/checks.md, Thresholds)."""

    host_oom_kills_per_hour: int = threshold(
        0, _("Out-of-memory kills within an hour over"), "/h", check=KIND, hi=10**6
    )


def host_oom(
    kernels: Sequence[HostHistory], *, limits: HostOomLimits, now: dt.datetime
) -> list[Finding]:
    """A finding for every node: warn when its `oom_kill_total` grew by more than
    `host_oom_kills_per_hour` within the hour before `now`, else pass. Pure: the growth is
    measured from the reading the previous run judged; `details.grew` keeps the hour's."""
    out: list[Finding] = []
    for kernel in kernels:
        target = node_target(kernel.node)
        kills, kept = hourly(kernel, COUNTER, now)
        details: dict[str, object] = {COUNTER: kernel.values.get(COUNTER), "last_hour": kills}
        if kept:
            details["grew"] = {COUNTER: kept}
        if kills > limits.host_oom_kills_per_hour:
            processes = "process" if kills == 1 else "processes"
            message = (
                f"the kernel's out-of-memory killer ended {kills:g} {processes} within an "
                "hour: a rank or a data loader's worker may have died of it"
            )
            out.append(warned(KIND, target, message, details, outcome=KILLED, node=kernel.node))
            continue
        said = QUIET
        out.append(
            passed(
                KIND,
                target,
                said + not_reported(unread(kernel, (COUNTER,))),
                details,
                node=kernel.node,
            )
        )
    return out


def run(ctx: Context) -> list[Finding]:
    """Every node's latest `vmstat` reading against the one judged last; those whose
    reading is the judged one and passed are counted, not loaded
    (docs/checks.md, Candidates)."""
    kernels = host_histories(
        ctx,
        READING,
        lambda host, _subject: node_target(host),
        unchanged=Unchanged(NODE, QUIET, by_node=True),
    )
    return host_oom(kernels, limits=ctx.limits, now=ctx.now)


SPEC = CheckSpec(
    kind=KIND,
    limits=HostOomLimits,
    label=LABEL,
    order=85,
    target=NODE,
    categories=(Category.SOFTWARE_BUG,),
    run=run,
    not_monitored=unless_reported(READING, NOT_MONITORED),
    pulls=frozenset({pull_name(READING)}),
)
