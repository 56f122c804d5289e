"""Panels one app shows on another app's page, lent at start-up.

A page shows what apps above its own know — the node page (fleet) shows the node's
maintenance windows, its repair, its GPUs' telemetry, charts and events, and its checks;
the job page (jobs) the job's effective rate, its incidents and its nodes ranked by
suspicion; the overview (reports) the windows in progress, the reliability page (reports)
the repeat offenders — yet its app may not import them:
dependencies point one way, and a template tag that reaches up is the same import in
disguise. So each page names a slot here; the app that knows lends a panel to it from its
`AppConfig.ready()` (a template and a function that reads the panel's context, as
`fleet/readers.py` lends readers), and the page's view renders what was lent; a slot
nobody lent to fails at start-up. A panel only reads: a page read writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest
from django.template.loader import render_to_string

from apps.common.lending import Registry

# The slots, and what a panel's context function is given (keyword arguments).
NODE = "node"  # the node page, under its heading: `node` (a fleet Node)
# The node page's body, after the state form: `node` and `params` (the page's query string,
# which picks the charts' range).
NODE_BODY = "node_body"
NODE_FOOT = "node_foot"  # the node page, last, after its history, jobs and Slurm: `node`
NODE_FACTS = "node_facts"  # the node page's list of facts, a `<div><dt>…<dd>…</div>` each: `node`
NODE_BELOW = "node_below"  # the node page, after its state history and jobs: `node`
JOB = "job"  # the job page, after its progress chart: `job` (a jobs Job)
JOB_BELOW = "job_below"  # the job page, after its ranks card: `job`
OVERVIEW = "overview"  # the overview's polled panels, above the node grid: `cluster`
RELIABILITY = "reliability"  # the reliability page, after the lemon nodes: `cluster`
SUBJECTS: dict[str, frozenset[str]] = {
    NODE: frozenset({"node"}),
    NODE_BODY: frozenset({"node", "params"}),
    NODE_FOOT: frozenset({"node"}),
    NODE_FACTS: frozenset({"node"}),
    NODE_BELOW: frozenset({"node"}),
    JOB: frozenset({"job"}),
    JOB_BELOW: frozenset({"job"}),
    OVERVIEW: frozenset({"cluster"}),
    RELIABILITY: frozenset({"cluster"}),
}

PanelContext = Callable[..., Mapping[str, Any] | None]


@dataclass(frozen=True)
class Panel:
    """A template and the read that fills it (None: nothing to show), placed by `order`."""

    template: str
    context: PanelContext
    order: int


# Who lends to each slot: a slot nobody filled fails at start-up (apps/common/lending.py).
_lent = Registry(
    "apps.common.panels",
    lenders={
        NODE: "the maintenance and repairs apps",
        NODE_BODY: "the telemetry and health apps",
        NODE_FOOT: "the telemetry app",
        NODE_FACTS: "the scheduler app",
        NODE_BELOW: "the scheduler app",
        JOB: "the reports and incidents apps",
        JOB_BELOW: "the health app",
        OVERVIEW: "the maintenance app",
        RELIABILITY: "the repairs app",
    },
)


def lend(*, slot: str, template: str, context: PanelContext, order: int = 100) -> None:
    """Show `template`, filled by `context(**subject)`, in `slot` (lower `order` first).
    Lending the same template again replaces it, so a second `ready()` adds nothing."""
    if slot not in SUBJECTS:
        raise ValueError(f"no panel slot {slot!r}: one of {', '.join(sorted(SUBJECTS))}")
    panels = [p for p in _lent.get(slot, []) if p.template != template]
    panels.append(Panel(template=template, context=context, order=order))
    _lent[slot] = sorted(panels, key=lambda p: p.order)


def render(*, slot: str, request: HttpRequest | None = None, **subject: Any) -> list[str]:  # noqa: ANN401
    """The slot's panels as HTML, in order, for `subject` (the keywords the slot names);
    a panel with nothing to show is left out."""
    if set(subject) != SUBJECTS[slot]:
        raise TypeError(f"slot {slot!r} is given {', '.join(sorted(SUBJECTS[slot]))}")
    out: list[str] = []
    for panel in _lent[slot]:
        context = panel.context(**subject)
        if context is None:
            continue
        html = render_to_string(panel.template, dict(context), request=request)
        if html.strip():
            out.append(html)
    return out
