"""Detection quality: many seeded simulated clusters with noise, decoys just under each
threshold and injected faults (`tests.bench.detection_sim`), every scheduled check run as
the schedule would run it, and what the checks flagged scored against the ground truth —
precision and recall per check kind. Goal: ≥ 0.99 for both, every kind.

- true positive: an injected fault whose target got the result docs/checks.md names (warn or
  fail) in some run and, for a rule that opens one, an incident of the right category and
  severity naming the right job or node (interrupting the job when it should);
- false positive: a non-pass result, or an incident, on a target with no fault of that
  kind (decoys included);
- false negative: an injected fault not so flagged;
- duplicate: more than one incident for one incident key, (category, job) or (category,
  node) — a storm or a check repeating every minute must give exactly one.

`make bench` runs it as one of its sections; alone, with its own database:
`python -m tests.bench.detection --seeds 20` (BENCH_DATABASE_URL, default a `kuae_detect`
PostgreSQL database on 127.0.0.1, dropped and recreated; `sqlite:///path` works too).
Prints figures; asserts nothing (tests/health/test_detection_quality.py does, on a few seeds).
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from tests.bench.detection_script import script_for
from tests.bench.detection_sim import (
    FABRIC_FIRST,
    GPUS,
    NODES,
    RUNS,
    TICKS,
    Fault,
    Script,
    World,
)

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/kuae_detect"
# (category, "job" | "node" | "component", job id, hostname or `switch:NAME`)
Key = tuple[str, str, object]


@dataclass
class Tally:
    """One check kind's figures."""

    injected: int = 0
    tp: int = 0
    fp: int = 0
    fn: int = 0

    def add(self, other: Tally) -> None:
        self.injected += other.injected
        self.tp += other.tp
        self.fp += other.fp
        self.fn += other.fn

    @property
    def precision(self) -> float | None:
        flagged = self.tp + self.fp
        return self.tp / flagged if flagged else None

    @property
    def recall(self) -> float | None:
        return self.tp / self.injected if self.injected else None


@dataclass
class Outcome:
    """What one seed's checks found, scored."""

    seed: int
    tallies: dict[str, Tally]
    labels: dict[str, list[int]] = field(default_factory=dict)  # fault → [injected, found]
    duplicates: int = 0
    decoys: int = 0
    decoys_flagged: int = 0
    misses: list[str] = field(default_factory=list)
    false_alarms: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0


def run_seed(seed: int, *, end: dt.datetime | None = None) -> Outcome:
    """Build seed `seed`'s cluster through the intake services, run every scheduled check
    after each of the last ticks, and score what they flagged."""
    from django.utils import timezone

    from apps.health.checks import SCHEDULED_KINDS
    from apps.health.models import CheckResult, CheckRun
    from apps.health.services import run_execute

    started = time.perf_counter()
    script = script_for(seed, end or timezone.now().replace(microsecond=0))
    world = World(script)
    flags: dict[tuple[str, str], set[str]] = defaultdict(set)
    messages: dict[tuple[str, str], str] = {}
    errors = []
    for i in range(TICKS):
        world.play(i)
        k = script.timeline.run_after(i)
        # `fabric` also runs after the ticks before (its first run only records readings).
        kinds = SCHEDULED_KINDS if k is not None else ("fabric",) if i >= FABRIC_FIRST else ()
        if not kinds:
            continue
        at = script.timeline.after(i)
        runs = [
            CheckRun.objects.create(cluster=world.cluster, kind=kind, requested_by="bench")
            for kind in kinds
        ]
        for run in runs:
            done = run_execute(run_id=run.pk, now=at)
            if done is None or done.status != "done":
                errors.append(f"seed {seed} tick {i} {run.kind}: {done.error if done else '?'}")
        for kind, target, status, message in (
            CheckResult.objects.filter(run__in=runs)
            .exclude(status="pass")
            .values_list("kind", "target", "status", "message")
        ):
            flags[kind, target].add(status)
            messages[kind, target] = message
    outcome = score(script, world, flags, messages)
    outcome.errors = errors
    outcome.seconds = time.perf_counter() - started
    return outcome


def _target(f: Fault, job_ids: list[int]) -> str:
    if f.target:
        return f.target
    if f.port is not None:
        return f"port:{f.node}/{f.port}"
    if f.gpu is not None:
        return f"gpu:{f.node}/{f.gpu}"
    if f.node is not None:
        return f"node:{f.node}"
    return f"job:{job_ids[f.job or 0]}"


def _key(f: Fault, script: Script, job_ids: list[int]) -> Key:
    """The incident key docs/checks.md names: the failing component's, (category, job) when
    it interrupts a job or is the job's own, else (category, node)."""
    assert f.category is not None
    if f.component:
        return (f.category, "component", f.component)
    if f.node is None:
        return (f.category, "job", job_ids[f.job or 0])
    job = script.job_of(f.node)
    if f.interrupts and job is not None:
        return (f.category, "job", job_ids[job])
    return (f.category, "node", f.node)


def score(
    script: Script,
    world: World,
    flags: dict[tuple[str, str], set[str]],
    messages: dict[tuple[str, str], str],
) -> Outcome:
    """Compare what was flagged (results of every run, incidents at the end) with the
    script's ground truth."""
    from apps.health.checks import CHECKS, SCHEDULED_KINDS
    from apps.incidents.models import Incident

    job_ids = [j.pk for j in world.jobs]
    incidents = [
        (i, {n.hostname for n in i.nodes.all()})
        for i in Incident.objects.filter(cluster=world.cluster).prefetch_related("nodes")
    ]

    def matching(key: Key) -> list[tuple[Incident, set[str]]]:
        category, scope, ident = key
        if scope == "component":
            return [
                (i, hosts)
                for i, hosts in incidents
                if i.category == category and i.details.get("component") == ident
            ]
        return [
            (i, hosts)
            for i, hosts in incidents
            if i.category == category
            and (i.job_id == ident if scope == "job" else i.job_id is None and ident in hosts)
        ]

    out = Outcome(script.seed, {kind: Tally() for kind in SCHEDULED_KINDS})
    decoys = {}
    for d in script.decoys:
        decoy = Fault(d.label, d.kind, "", d.node, d.gpu, d.job, port=d.port, target=d.target)
        target = _target(decoy, job_ids)
        decoys[d.kind, target] = d.label
    out.decoys = len(decoys)
    expected: dict[tuple[str, str], Fault] = {}
    keys: set[Key] = set()
    for f in script.faults:
        target = _target(f, job_ids)
        expected[f.kind, target] = f
        tally = out.tallies[f.kind]
        tally.injected += 1
        label = out.labels.setdefault(f"{f.kind}: {f.label}", [0, 0])
        label[0] += 1
        got = flags.get((f.kind, target), set())
        why = None
        if f.status not in got:
            why = f"flagged {'/'.join(sorted(got))}, expected {f.status}" if got else "not flagged"
        elif f.category is not None:
            key = _key(f, script, job_ids)
            keys.add(key)
            found = matching(key)
            expected_interrupts = f.interrupts and key[1] in ("job", "component")
            if not found:
                why = f"flagged, but no {f.category} incident for {key[1]} {key[2]}"
            elif f.node is not None and not any(f.node in hosts for _, hosts in found):
                why = f"the {f.category} incident does not name {f.node}"
            elif found[0][0].severity != f.severity:
                why = f"incident {found[0][0].severity}, expected {f.severity}"
            elif found[0][0].interrupts_job != expected_interrupts:
                why = f"incident interrupts_job={found[0][0].interrupts_job}"
        if why is None:
            tally.tp += 1
            label[1] += 1
        else:
            tally.fn += 1
            said = f"{f.label}, {f.note}" if f.note else f.label
            out.misses.append(f"seed {script.seed} {f.kind} {target} ({said}): {why}")
    matched: set[int] = set()
    for key in keys:
        found = matching(key)
        out.duplicates += max(0, len(found) - 1)
        matched.update(i.pk for i, _ in found)
    kind_of = {str(c): str(check.kind) for check in CHECKS.values() for c in check.categories}
    false_subjects: dict[str, set[str]] = defaultdict(set)
    for (kind, target), statuses in sorted(flags.items()):
        if (kind, target) in expected:
            continue
        out.tallies[kind].fp += 1
        decoy = decoys.get((kind, target))
        out.decoys_flagged += decoy is not None
        false_subjects[kind].add(target.split(":", 1)[1].split("/")[0])
        out.false_alarms.append(
            f"seed {script.seed} {kind} {target} {'/'.join(sorted(statuses))}"
            f"{f' (decoy: {decoy})' if decoy else ''}: {messages[kind, target]}"
        )
    for incident, hosts in incidents:
        if incident.pk in matched:
            continue
        kind = kind_of.get(incident.category, "?")
        subjects = hosts | {str(incident.job_id)} if incident.job_id else hosts
        if not subjects & false_subjects[kind]:  # not already counted by its result
            out.tallies.setdefault(kind, Tally()).fp += 1
        out.false_alarms.append(
            f"seed {script.seed} incident {incident.category} {incident.severity} "
            f"job={incident.job_id} nodes={sorted(hosts)}: {incident.title}"
        )
    return out


def _ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def report(outcomes: list[Outcome], seconds: float, where: str) -> None:
    """Print the table, the per-fault breakdown and what was missed or falsely flagged."""
    from apps.health.checks import SCHEDULED_KINDS

    total: dict[str, Tally] = {kind: Tally() for kind in SCHEDULED_KINDS}
    labels: Counter[str] = Counter()
    found: Counter[str] = Counter()
    for o in outcomes:
        for kind, tally in o.tallies.items():
            total.setdefault(kind, Tally()).add(tally)
        for label, (n, hit) in o.labels.items():
            labels[label] += n
            found[label] += hit
    seeds = len(outcomes)
    print(
        f"\nDetection quality: {seeds} seeded clusters of {NODES} nodes × {GPUS} GPUs, 4–5 jobs, "
        f"every check run {RUNS}× a minute apart — {where}"
    )
    print(f"  {'kind':<12}{'injected':>9}{'TP':>6}{'FP':>5}{'FN':>5}{'precision':>11}{'recall':>8}")
    everything = Tally()
    for kind, t in total.items():
        everything.add(t)
        print(
            f"  {kind:<12}{t.injected:>9}{t.tp:>6}{t.fp:>5}{t.fn:>5}"
            f"{_ratio(t.precision):>11}{_ratio(t.recall):>8}"
        )
    duplicates = sum(o.duplicates for o in outcomes)
    print(
        f"  {'all':<12}{everything.injected:>9}{everything.tp:>6}{everything.fp:>5}"
        f"{everything.fn:>5}{_ratio(everything.precision):>11}{_ratio(everything.recall):>8}"
        f"   duplicate incidents: {duplicates}   goal ≥ 0.99 both, every kind; 0 duplicates"
    )
    print("  by fault (found / injected):")
    for label in sorted(labels):
        print(f"    {label:<52}{found[label]:>4} / {labels[label]}")
    decoys = sum(o.decoys for o in outcomes)
    flagged = sum(o.decoys_flagged for o in outcomes)
    print(
        f"  decoys (just under a threshold, or harmless look-alikes): {decoys}, flagged {flagged}"
    )
    for title, lines in (
        ("missed", [m for o in outcomes for m in o.misses]),
        ("false alarms", [m for o in outcomes for m in o.false_alarms]),
        ("run errors", [m for o in outcomes for m in o.errors]),
    ):
        if lines:
            print(f"  {title} ({len(lines)}):")
            for line in lines[:15]:
                print(f"    {line[:300]}")
    per_seed = sorted(o.seconds for o in outcomes)
    print(
        f"  {seconds:.0f} s for {seeds} seeds (median {per_seed[len(per_seed) // 2]:.1f} s a seed)"
        if outcomes
        else ""
    )


def bench_detection(seeds: int, first: int = 0) -> None:
    """The detection-quality section of `make bench`."""
    from django.db import connection

    # The drain cap (one an hour for 32 nodes) holds back most drains here, each logged.
    logging.getLogger("apps.health.outcomes").setLevel(logging.ERROR)
    started = time.perf_counter()
    outcomes = [run_seed(seed) for seed in range(first, first + seeds)]
    name = connection.settings_dict["NAME"]
    report(outcomes, time.perf_counter() - started, f"{connection.vendor} ({name})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--first-seed", type=int, default=0)
    args = parser.parse_args()
    from tests.bench.run import django_ready

    django_ready(os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL))
    bench_detection(args.seeds, args.first_seed)


if __name__ == "__main__":
    sys.path.insert(0, os.getcwd())
    main()
