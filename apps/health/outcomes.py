"""What a check run's findings change: results, incidents, clearings and node states.

Called by `services.run_execute` inside one transaction per run, with the cluster row
locked so two runs never apply at once.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

from django.db.models import Max, Q

from apps.common.bulk import among
from apps.fleet.choices import NodeState, StateSource
from apps.fleet.models import Cluster, Node, NodeStateChange
from apps.fleet.services import node_set_state
from apps.fleet.validators import nodes_named
from apps.health import blast, inputs
from apps.health import detectors as d
from apps.health.checks import CHECKS, kind_label_english
from apps.health.choices import ResultStatus
from apps.health.incident_text import (
    fit_title,
    named_parts,
    part_words,
    times,
    xid_pairs,
    xid_seen,
)
from apps.health.limits import Limits
from apps.health.models import CheckResult, CheckRun
from apps.health.results_store import results_store
from apps.incidents.choices import ACTIVE_STATUSES, IncidentStatus, Severity, Source
from apps.incidents.models import Incident, TimelineEntry
from apps.incidents.services import incident_fold, incident_note, incident_open, incident_update
from apps.jobs.models import Job

log = logging.getLogger(__name__)

STATE_RANK = {NodeState.HEALTHY: 0, NodeState.SUSPECT: 1, NodeState.DRAINED: 2, NodeState.DOWN: 3}
DRAINS = (NodeState.DRAINED, NodeState.DOWN)
QUIET_RESOLVES = (Severity.SEV3, Severity.SEV4)  # warnings that come and go resolve alone
Key = tuple[str, str, object]  # (category, "job" | "node" | "cluster", id)


def findings_apply(
    *,
    run: CheckRun,
    findings: Sequence[d.Finding],
    job_of_node: dict[str, int],
    now: dt.datetime,
    limits: Limits,
) -> dict[str, int]:
    """Store results, open or update incidents, note clearings, resolve warnings that stayed
    clear, change node states. Returns the run's counts."""
    cluster = run.cluster
    nodes = {
        h: (pk, state)
        for h, pk, state in Node.objects.filter(cluster=cluster).values_list(
            "hostname", "pk", "state"
        )
    }
    cleared = results_store(run, findings, nodes, now)
    failing = _blast_groups(cluster, findings)
    opened = _incidents(run, findings, job_of_node, now, failing)
    if cleared:
        _note_cleared(run, cleared, now)
    resolved = _resolve_quiet(run, findings, now, limits)
    spared = blast.spared(failing)  # a broken storage's nodes keep their state
    changed = _node_states(run, [f for f in findings if id(f) not in spared], nodes, now, limits)
    counts = Counter(f.status for f in findings)
    return {
        "pass": counts[ResultStatus.PASS],
        "warn": counts[ResultStatus.WARN],
        "fail": counts[ResultStatus.FAIL],
        "incidents_opened": opened,
        "incidents_resolved": resolved,
        "nodes_changed": changed,
    }


def _key(f: d.Finding, job_of_node: dict[str, int]) -> Key:
    """(category, job) when the finding interrupts a job, else (category, node)."""
    category = f.category or ""
    if f.target.startswith("cluster:"):
        return (category, "cluster", f.target)
    job = f.job if f.job is not None and f.node is None else None
    if f.interrupts_job:
        job = f.job if f.job is not None else job_of_node.get(f.node or "")
    if job is not None:
        return (category, "job", job)
    return (category, "node", f.node)


def _blast_groups(cluster: Cluster, findings: Sequence[d.Finding]) -> list[blast.Group]:
    """The run's failing components (docs/checks.md, Blast radius); no query unless enough nodes
    fail."""
    failing = {f.node for f in findings if f.status == ResultStatus.FAIL and f.node}
    if len(failing) < blast.MIN_NODES:
        return []
    return blast.groups(findings, inputs.places(cluster))


def blast_fingerprint(kind: str, component: str) -> str:
    """The fingerprint of a check's incident for a failing component: one per component and
    check, so the next run updates it rather than open another."""
    return f"blast:{kind}:{component}"


def _incidents(
    run: CheckRun,
    findings: Sequence[d.Finding],
    job_of_node: dict[str, int],
    now: dt.datetime,
    failing: Sequence[blast.Group] = (),
) -> int:
    """One open incident per failing component (its nodes' failing findings), and per
    (category, job) or (category, node) for the rest: update it, or open it. A node an open
    component incident of this check names folds into that incident."""
    explained = {id(f) for g in failing for f in g.findings}
    prefix = blast_fingerprint(run.kind, "")
    component_incidents = list(
        Incident.objects.filter(
            cluster=run.cluster, status__in=ACTIVE_STATUSES, fingerprint__startswith=prefix
        ).prefetch_related("nodes")
        if failing or any(f.status == ResultStatus.FAIL and f.node for f in findings)
        else ()
    )
    named = {n.hostname: i for i in component_incidents for n in i.nodes.all()}
    folded: dict[int, list[d.Finding]] = defaultdict(list)
    groups: dict[Key, list[d.Finding]] = defaultdict(list)
    for f in findings:
        if f.status == ResultStatus.PASS or not f.category or id(f) in explained:
            continue
        if f.status == ResultStatus.FAIL and f.node in named:
            folded[named[f.node].pk].append(f)
        else:
            groups[_key(f, job_of_node)].append(f)
    if not groups and not failing and not folded:
        return 0
    active = list(
        Incident.objects.filter(
            cluster=run.cluster, status__in=ACTIVE_STATUSES, category__in={k[0] for k in groups}
        ).prefetch_related("nodes")
    )
    by_job = {(i.category, i.job_id): i for i in active if i.job_id is not None}
    by_node = {(i.category, n.hostname): i for i in active for n in i.nodes.all()}
    by_print = {(i.category, i.fingerprint): i for i in active if i.fingerprint}
    hosts = {f.node for fs in groups.values() for f in fs if f.node}
    hosts |= {h for fs in groups.values() for f in fs for h in f.culprits}
    hosts |= blast.grouped_nodes(failing) | {f.node for fs in folded.values() for f in fs if f.node}
    node_objs = {
        n.hostname: n
        for n in among(Node.objects.filter(cluster=run.cluster), "hostname", list(hosts))
    }
    opened = _component_incidents(run, failing, component_incidents, job_of_node, node_objs, now)
    by_pk = {i.pk: i for i in component_incidents}
    for pk, items in folded.items():
        _update(run, by_pk[pk], items, node_objs, now)
    jobs = {j.pk: j for j in Job.objects.filter(pk__in={k[2] for k in groups if k[1] == "job"})}
    for (category, scope, ident), items in groups.items():
        if scope == "job":
            incident = by_job.get((category, int(str(ident))))
        elif scope == "cluster":
            incident = by_print.get((category, f"health:{ident}"))
        else:
            incident = by_node.get((category, str(ident)))
        if incident is None:
            _open(run, category, scope, ident, items, jobs, node_objs, now)
            opened += 1
        else:
            _update(run, incident, items, node_objs, now)
    return opened


def _component_incidents(
    run: CheckRun,
    failing: Sequence[blast.Group],
    active: Sequence[Incident],
    job_of_node: dict[str, int],
    node_objs: dict[str, Node],
    now: dt.datetime,
) -> int:
    """One incident per failing component naming all its failing nodes: the open one of
    this check for it is updated, else one is opened. Returns how many were opened."""
    by_print = {i.fingerprint: i for i in active}
    opened = 0
    for group in failing:
        c, items = group.component, list(group.findings)
        incident = by_print.get(blast_fingerprint(run.kind, c.key))
        if incident is not None:
            _update(run, incident, items, node_objs, now)
            continue
        ran = Counter(job_of_node[h] for h in c.nodes if h in job_of_node)
        job = Job.objects.filter(pk=ran.most_common(1)[0][0]).first() if ran else None
        first = min(f.occurred_at or now for f in items)
        label = kind_label_english(run.kind)
        incident_open(
            cluster=run.cluster,
            title=f"{c.label}: {len(c.nodes)} of its {c.size} nodes fail {label.lower()}",
            category=c.category,
            severity=min(f.severity for f in items),
            detected_at=now,
            occurred_at=min(first, now),
            job=job,
            nodes=[node_objs[h] for h in c.nodes if h in node_objs],
            interrupts_job=job is not None and any(f.interrupts_job for f in items),
            description=(
                f"{len(c.nodes)} of the {c.size} nodes behind {c.label} fail "
                f"{label} in one run: the {blast.LABEL[c.kind]}, not each node.\n"
                + "\n".join(f"{f.node}: {f.message}" for f in items[:20])
            ),
            source=Source.HEALTH,
            fingerprint=blast_fingerprint(run.kind, c.key),
            details={
                "component": c.key,
                "component_nodes": c.size,
                "failing_nodes": list(c.nodes),
                "check": run.kind,
            },
            actor=f"check:{run.kind}",
        )
        opened += 1
    return opened


def _open(
    run: CheckRun,
    category: str,
    scope: str,
    ident: object,
    items: list[d.Finding],
    jobs: dict[int, Job],
    node_objs: dict[str, Node],
    now: dt.datetime,
) -> None:
    culprits = sorted({h for f in items for h in f.culprits if h in node_objs})
    hosts = sorted({f.node for f in items if f.node} | set(culprits))
    first = min(f.occurred_at or now for f in items)
    worst = min(f.severity for f in items)
    job = jobs.get(ident) if scope == "job" and isinstance(ident, int) else None
    where = job.name if job else str(ident)
    if hosts and scope == "job":
        where += f" ({', '.join(hosts[:3])}{' …' if len(hosts) > 3 else ''})"
    parts = named_parts(items, one_host=len(hosts) == 1)
    if parts:  # the GPUs and ports it blames, as a repair names them
        where += f" — {parts}"
    said = _localized(items)
    seen = xid_seen(items)
    details: dict[str, object] = {"verdict": said} if said else {}
    if seen:  # a storm's first run keeps how many lines it folded (docs/checks.md, Storms)
        details["xid_counts"] = seen
    incident = incident_open(
        cluster=run.cluster,
        title=fit_title(f"{kind_label_english(run.kind)}: {where}"),
        category=category,
        severity=worst,
        detected_at=now,
        occurred_at=min(first, now),
        localized_at=now if culprits else None,
        job=job,
        nodes=[node_objs[h] for h in hosts if h in node_objs],
        interrupts_job=job is not None and any(f.interrupts_job for f in items),
        description="\n".join(f.message for f in items[:20]),
        source=Source.HEALTH,
        fingerprint=f"health:{ident}" if scope == "cluster" else "",
        details=details or None,
        actor=f"check:{run.kind}",
    )
    lines = [said] if said else []
    lines += [
        f"XID {code} seen {times(n)} on {part_words(target)}"
        for (target, code), n in xid_pairs(seen)
    ]
    if lines:
        incident_note(
            incident=incident,
            kind=TimelineEntry.Kind.UPDATED,
            actor=f"check:{run.kind}",
            at=now,
            text="; ".join(lines),
        )


def _localized(items: Sequence[d.Finding]) -> str:
    """The sentence the findings give for where a job's fault is (a hang's verdict)."""
    return next((f.localized for f in items if f.localized), "")


def _update(
    run: CheckRun,
    incident: Incident,
    items: list[d.Finding],
    node_objs: dict[str, Node],
    now: dt.datetime,
) -> None:
    """Raise its severity to the worst finding's (a warning that escalated to a failure);
    add the nodes it newly names; note repeats of an XID (a storm folds in here); name a
    job's culprits when a verdict first finds them (the incident is localised then), and
    note the verdict's sentence whenever it changes."""
    worst = min((f.severity for f in items if f.category), default=None)
    if worst is not None and worst < incident.severity:  # sev1 < sev2 < …: more severe
        incident_update(incident=incident, changes={"severity": worst}, actor=f"check:{run.kind}")
    known = {n.hostname for n in incident.nodes.all()}
    added = sorted(
        {f.node for f in items if f.node and f.node not in known and f.node in node_objs}
    )
    lines = []
    if added:
        lines.append(
            f"also on {', '.join(added)}: "
            + "; ".join(f.message for f in items if f.node in added)[:1000]
        )
    culprits = sorted({h for f in items for h in f.culprits if h in node_objs} - known)
    details: dict[str, object] = {}
    said = _localized(items)
    if said and (culprits or said != incident.details.get("verdict")):
        lines.append(said)
        details["verdict"] = said
    seen = xid_seen(items)
    if seen:  # a storm folds in: its count grows, and the timeline says by how much
        totals = {t: dict(codes) for t, codes in (incident.details.get("xid_counts") or {}).items()}
        for (target, code), n in xid_pairs(seen):
            codes = totals.setdefault(target, {})
            codes[code] = codes.get(code, 0) + n
            lines.append(
                f"XID {code} seen {n} more time{'s' if n != 1 else ''} on "
                f"{part_words(target)} ({codes[code]} in all)"
            )
        details["xid_counts"] = totals
    incident_fold(
        incident=incident,
        nodes=[node_objs[h] for h in sorted({*added, *culprits})],
        details=details,
        localized_at=now if culprits else None,
    )
    if lines:
        incident_note(
            incident=incident,
            kind=TimelineEntry.Kind.UPDATED,
            actor=f"check:{run.kind}",
            at=now,
            text="; ".join(lines),
        )


def _active_of_check(run: CheckRun) -> Q:
    return Q(
        cluster=run.cluster,
        status__in=ACTIVE_STATUSES,
        source=Source.HEALTH,
        category__in=CHECKS[run.kind].categories,
    )


def _note_cleared(run: CheckRun, cleared: Sequence[d.Finding], now: dt.datetime) -> None:
    """Note in each still-open incident of this check that its condition cleared."""
    hosts = {f.node for f in cleared if f.node}
    jobs = {f.job for f in cleared if f.job is not None and f.node is None}
    incidents = Incident.objects.filter(
        Q(nodes__hostname__in=hosts) | Q(job_id__in=jobs), _active_of_check(run)
    ).distinct()
    for incident in incidents:
        stays = (
            "it resolves itself if it stays clear"
            if incident.severity in QUIET_RESOLVES
            else "the incident stays open for an engineer to resolve"
        )
        incident_note(
            incident=incident,
            kind=TimelineEntry.Kind.CLEARED,
            actor=f"check:{run.kind}",
            at=now,
            text=f"{kind_label_english(run.kind)} passes again; {stays}",
        )


def _resolve_quiet(
    run: CheckRun, findings: Sequence[d.Finding], now: dt.datetime, limits: Limits
) -> int:
    """Resolve this check's sev3/sev4 incidents whose nodes have passed it for the quiet
    period (docs/checks.md, Clearing and self-resolution)."""
    # A blind GPU (`error`, details.blind: its exporter cannot report a field) holds no
    # incident open: nothing bad is seen there (docs/checks.md, Blind results).
    failing = {
        f.node
        for f in findings
        if f.status != ResultStatus.PASS and f.node and not f.details.get("blind")
    }
    candidates = list(
        Incident.objects.filter(_active_of_check(run), severity__in=QUIET_RESOLVES)
        .exclude(nodes__hostname__in=failing)
        .prefetch_related("nodes")
    )
    if not candidates:
        return 0
    hosts = {n.hostname for i in candidates for n in i.nodes.all()}
    results = CheckResult.objects.filter(
        cluster=run.cluster, kind=run.kind, node__hostname__in=hosts
    ).values("node__hostname")
    bad = {
        r["node__hostname"]
        for r in results.exclude(status=ResultStatus.PASS)
        .exclude(status=ResultStatus.ERROR, details__blind=True)
        .values("node__hostname")
    }
    clear_since = {r["node__hostname"]: r["clear"] for r in results.annotate(clear=Max("since"))}
    quiet = dt.timedelta(seconds=limits.quiet_resolve_s)
    resolved = 0
    for incident in candidates:
        names = [n.hostname for n in incident.nodes.all()]
        if not names or any(h in bad or h not in clear_since for h in names):
            continue
        cleared_at = max(max(clear_since[h] for h in names), incident.detected_at)
        if now - cleared_at < quiet:
            continue
        incident_update(
            incident=incident,
            changes={
                "status": IncidentStatus.RESOLVED,
                "resolved_at": now,
                "recovered_at": incident.recovered_at or cleared_at,
            },
            actor=f"check:{run.kind}",
        )
        incident_note(
            incident=incident,
            kind=TimelineEntry.Kind.CLEARED,
            actor=f"check:{run.kind}",
            at=now,
            text=f"clear for {(now - cleared_at).total_seconds() / 60:.0f} min: resolved",
        )
        resolved += 1
    return resolved


def _node_states(
    run: CheckRun,
    findings: Iterable[d.Finding],
    nodes: dict[str, tuple[int, str]],
    now: dt.datetime,
    limits: Limits,
) -> int:
    """Move nodes to the state the findings call for (never to a better one), within the
    hourly cap on automatic drains. A hang's culprits, the nodes its verdict blames, become
    `suspect` with the verdict as their reason (docs/checks.md, Ranks)."""
    wanted: dict[str, tuple[NodeState, d.Finding]] = {}

    def want(host: str | None, state: NodeState | None, f: d.Finding) -> None:
        if f.status == ResultStatus.PASS or state is None or host is None or host not in nodes:
            return
        held = wanted.get(host)
        if held is None or STATE_RANK[state] > STATE_RANK[held[0]]:
            wanted[host] = (state, f)

    for f in findings:
        want(f.node, f.node_state, f)
        for host in f.suspects:
            want(host, NodeState.SUSPECT, f)
    if not wanted:
        return 0
    if Cluster.objects.filter(pk=run.cluster_id, automation_paused=True).exists():
        # paused: results and incidents stand; no node changes state while paused
        log.warning(
            "automation paused on %s: %d node(s) keep their state", run.cluster, len(wanted)
        )
        return 0
    cap = max(1, int(limits.drain_cap_share * len(nodes)))
    used = NodeStateChange.objects.filter(
        node__cluster=run.cluster,
        source=StateSource.CHECK,
        state__in=DRAINS,
        recorded_at__gte=now - dt.timedelta(hours=1),
    ).count()
    changed = 0
    node_rows = nodes_named(cluster_id=run.cluster_id, hostnames=wanted).nodes
    # nodes by primary key, the one lock order (docs/architecture.md, Locks)
    for host, (state, f) in sorted(wanted.items(), key=lambda item: nodes[item[0]][0]):
        current = nodes[host][1]
        rank = STATE_RANK.get(NodeState(current)) if current in NodeState.values else None
        if rank is None or STATE_RANK[state] <= rank:
            continue  # maintenance is the operator's; never improve a state automatically
        if state in DRAINS:
            if used >= cap:
                log.warning("drain cap (%s/h) reached: %s stays %s", cap, host, current)
                continue
            used += 1
        node_set_state(
            node=node_rows[host],
            state=state,
            reason=f"{run.kind}: {f.message}",
            at=now,
            source=StateSource.CHECK,
            by=f"check:{run.kind}",
        )
        changed += 1
    return changed
