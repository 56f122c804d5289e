"""The simulated cluster of the detection-quality run (`tests.bench.detection`): its timeline,
its script and ground truth (written by `tests.bench.detection_script.script_for`), and
`World`, which writes a script through the intake services the API calls — each batch parsed
by the API's own parser first — one 60-second tick at a time; the checks run after each of
the last `RUNS` ticks, at the moment they would run on the schedule.

The faults' expectations come from docs/checks.md, never from the detectors: a fault whose
target the checks miss is a false negative of the detector, a decoy they flag a false
positive.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

NODES = 32
GPUS = 8
MODEL = "H100-SXM5-80GB"
PEAK_TFLOPS = 989.4
TICK_S = 60  # the sweep interval of an exporter and the check schedule's
TICKS = 16
T = TICKS - 1  # the last tick
RUNS = 3  # every check runs after each of the last three ticks
# `fabric` runs after these ticks too, from this one on: its first run only records each
# port's reading (growth needs two), so its faults come after it.
FABRIC_FIRST = T - 4
RUN_DELAY_S = 5
PROBE_EVERY = 5  # GEMM probe rounds: ticks T, T-5, T-10, …
HANG_LIMIT_S = 600.0  # job_hang's floor (docs/checks.md, `job_hang`)
CHECKSUM = 1834.2503662109375  # the fixed-seed GEMM's checksum every healthy GPU computes
BUSES = ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")  # an HGX H100 board's GPU buses
# dcgm-exporter's names for what the script reports (the product maps them: docs/integrations.md).
DCGM = {
    "gpu_util": "DCGM_FI_DEV_GPU_UTIL",
    "temp_c": "DCGM_FI_DEV_GPU_TEMP",
    "mem_temp_c": "DCGM_FI_DEV_MEMORY_TEMP",
    "power_w": "DCGM_FI_DEV_POWER_USAGE",
    "xid": "DCGM_FI_DEV_XID_ERRORS",
    "ecc_sbe_total": "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
    "ecc_dbe_total": "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    "nvlink_crc_errors": "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
    "pcie_replay_total": "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    "row_remap_failure": "DCGM_FI_DEV_ROW_REMAP_FAILURE",
}

# XID codes whose reading (docs/xid.md) is the same in the old table and NVIDIA's catalogue.
FATAL_XIDS = {48: "gpu_hbm", 64: "gpu_hbm", 74: "gpu", 79: "gpu", 95: "gpu_hbm"}
APP_XIDS = (13, 31, 43)
# The jobs that report job-wide samples cycle through these (each seed has two or three such
# jobs, taking the next three slots): seeds 0 and 1 hold every one but `healthy`.
WIDE_SCENARIOS = ("hang_wide", "hang_same_step", "healthy", "nan", "near_limit")
# Jobs whose nodes keep sending timings to the end: a straggler there must be found.
TIMED_TO_THE_END = frozenset({"healthy", "nan", "hang_same_step", "node_only"})


def iso(t: dt.datetime) -> str:
    """An intake timestamp."""
    return t.isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class Timeline:
    """When each tick's data arrives and when each run happens; `end` is the last run."""

    end: dt.datetime

    def tick(self, i: int) -> dt.datetime:
        return self.end - dt.timedelta(seconds=TICK_S * (T - i) + RUN_DELAY_S)

    def run(self, k: int) -> dt.datetime:
        return self.after(T - RUNS + 1 + k)

    def after(self, i: int) -> dt.datetime:
        """When checks that run after tick i run."""
        return self.tick(i) + dt.timedelta(seconds=RUN_DELAY_S)

    def run_after(self, i: int) -> int | None:
        """The run that follows tick i, if one does."""
        k = i - (T - RUNS + 1)
        return k if 0 <= k < RUNS else None


@dataclass(frozen=True)
class Fault:
    """An injected fault and what docs/checks.md says the checks must make of it: a result
    `status` of check `kind` on its target, and — with a `category` — an incident of that
    category and `severity` (None: no incident may open for it). A node fault that
    `interrupts` names the job running on the node; `job` is a job-level fault's job index."""

    label: str
    kind: str
    status: str
    node: str | None = None
    gpu: int | None = None
    job: int | None = None
    category: str | None = None
    severity: str | None = None
    interrupts: bool = False
    note: str = ""  # e.g. the XID code
    port: str | None = None  # device/port of a NIC port fault
    # A component's incident (`switch:NAME`) instead of one per job or node.
    component: str = ""
    # The result's target where it is a part of a node of a host check's own
    # (`mc:HOST/mc0`, `mount:HOST:/checkpoints`, `clock:HOST`; tests/bench/detection_host.py).
    target: str = ""


# docs/checks.md, per rule a fault trips: the check, its result, the incident's category (None:
# none may open; "": the fault's own, by its XID's or counter's kind) and severity, and
# whether it interrupts the job running on the node.
RULES: dict[str, tuple[str, str, str | None, str | None, bool]] = {
    "hang": ("job_hang", "fail", "hang", "sev1", True),
    "silent": ("heartbeat", "fail", "node_unreachable", "sev2", True),
    "slow": ("slow_node", "warn", "slow_node", "sev3", False),
    "corrupt": ("sdc", "fail", "silent_data_corruption", "sev2", False),
    "out_of_service": ("gpu_errors", "fail", "", "sev2", True),
    "app_xid": ("gpu_errors", "warn", None, None, False),
    "link": ("gpu_errors", "warn", "gpu", "sev3", False),
    "hot": ("thermal", "warn", "gpu_thermal", "sev4", False),
    "port_down": ("fabric", "fail", "nic", "sev2", True),
    "port_warn": ("fabric", "warn", "nic", "sev3", False),
    "leaf": ("fabric", "fail", "network_switch_cable", "sev2", True),
    "host_ue": ("host_memory", "fail", "host_memory", "sev2", True),
    "host_ce": ("host_memory", "warn", "host_memory", "sev3", False),
    "pcie_fail": ("pcie", "fail", "", "sev2", True),  # the device's: gpu or nic
    "pcie_warn": ("pcie", "warn", "", "sev3", False),
    "mount_fail": ("storage", "fail", "storage", "sev2", True),
    "clock": ("clock", "warn", "other", "sev3", False),
    "oom": ("host_oom", "warn", "software_bug", "sev3", False),
}


def expect(
    rule: str,
    label: str,
    *,
    node: str | None = None,
    gpu: int | None = None,
    job: int | None = None,
    category: str = "",
    note: str = "",
    port: str | None = None,
    component: str = "",
    interrupts: bool | None = None,
    target: str = "",
) -> Fault:
    """A fault that trips `rule` (RULES), with what docs/checks.md says comes of it
    (`interrupts` overrides the rule's: a component's incident interrupts the job on its
    nodes, if any)."""
    kind, status, default, severity, interrupting = RULES[rule]
    incident = category or default or None
    if interrupts is not None:
        interrupting = interrupts
    return Fault(
        label,
        kind,
        status,
        node,
        gpu,
        job,
        incident,
        severity,
        interrupting,
        note,
        port,
        component,
        target,
    )


@dataclass(frozen=True)
class Decoy:
    """Something just under a threshold, or a harmless look-alike: check `kind` must pass it."""

    label: str
    kind: str
    node: str | None = None
    gpu: int | None = None
    job: int | None = None
    port: str | None = None
    target: str = ""  # a host check's own target (Fault.target)


@dataclass
class JobPlan:
    """A running job: its nodes, how it reports, and every step sample it sends."""

    name: str
    hosts: list[str]
    scenario: str
    step_s: float
    started_at: dt.datetime
    node_only: bool
    samples: list[dict[str, Any]] = field(default_factory=list)  # ts as datetime, sorted
    wide_until: dt.datetime | None = None  # a per-node-only job that once reported job-wide
    # While building: (ts, step, step time, common jitter) per step, oldest first, and the
    # step whose job-wide sample carries a non-finite `nan_what`.
    rows: list[tuple[dt.datetime, int, float, float]] = field(default_factory=list)
    nan_row: int | None = None
    nan_what: str = ""


@dataclass
class Tick:
    """What arrives in one tick: GPU samples, kernel-log lines, heartbeats, step samples."""

    telemetry: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    beats: list[tuple[str, dt.datetime]] = field(default_factory=list)
    metrics: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    exposition: str = ""  # dcgm-exporter text a relay scraped from the exporter hosts
    ports: list[dict[str, Any]] = field(default_factory=list)  # the agents' `ports`
    node_text: dict[str, str] = field(default_factory=dict)  # node_exporter text by host
    host: list[dict[str, Any]] = field(default_factory=list)  # the agents' `host` readings
    again: Tick | None = None  # the previous tick's batches, re-sent first (a lost answer)


@dataclass
class Script:
    """One seed's whole simulation and its ground truth."""

    seed: int
    cluster: str
    timeline: Timeline
    hosts: list[str]
    jobs: list[JobPlan]
    ticks: list[Tick]
    faults: list[Fault]
    decoys: list[Decoy]
    drained: list[str] = field(default_factory=list)  # drained by an operator beforehand

    def job_of(self, host: str) -> int | None:
        """The index of the job running on `host`, if any."""
        return next((j for j, job in enumerate(self.jobs) if host in job.hosts), None)


# --- writing it through the services ---------------------------------------------------


class World:
    """A script written through the intake services, tick by tick."""

    def __init__(self, script: Script) -> None:
        from apps.fleet.services import NodeSpec, cluster_create, node_set_state, nodes_register
        from apps.jobs.services import job_create
        from apps.simulator.host import REQUIRED_MOUNTS

        self.script = script
        self.cluster = cluster_create(
            name=script.cluster,
            gpu_model=MODEL,
            peak_tflops_per_gpu=PEAK_TFLOPS,
            gpus_per_node=GPUS,
        )
        # The mounts the simulator's nodes have and `storage` judges (docs/checks.md, `storage`).
        self.cluster.required_mounts = list(REQUIRED_MOUNTS)
        self.cluster.save(update_fields=["required_mounts"])
        in_service = script.timeline.end - dt.timedelta(days=30)
        nodes = nodes_register(
            cluster=self.cluster,
            specs=[
                NodeSpec(hostname=h, rack=f"r{n // 8}", in_service_at=in_service)
                for n, h in enumerate(script.hosts)
            ],
        )
        self.nodes = {n.hostname: n for n in nodes}
        for host in script.drained:
            node_set_state(
                node=self.nodes[host],
                state="drained",
                reason="operator: reseating a NIC",
                at=script.timeline.end - dt.timedelta(hours=2),
                by="bench",
            )
        self.jobs = []
        for job in script.jobs:
            created, _ = job_create(
                cluster=self.cluster,
                nodes=[self.nodes[h] for h in job.hosts],
                name=job.name,
                n_params=70e9,
                gpu_count=GPUS * len(job.hosts),
                status="running",
                started_at=job.started_at,
            )
            self.jobs.append(created)

    def play(self, i: int) -> None:
        """Everything tick i brings, as the API would store it."""
        from apps.fleet.services import nodes_touch_bulk
        from apps.jobs.intake import parse_metric_batch
        from apps.jobs.services import job_metrics_ingest
        from apps.telemetry.host import parse_telemetry_with_host
        from apps.telemetry.intake import parse_event_batch
        from apps.telemetry.prometheus import parse_dcgm, parse_exposition
        from apps.telemetry.services import (
            events_ingest,
            telemetry_batch_ingest,
            telemetry_ingest,
        )

        tick = self.script.ticks[i]
        received = self.script.timeline.tick(i) + dt.timedelta(seconds=1)
        for batches, sent in ((tick.again, i - 1), (tick, i)):
            if batches is None:
                continue
            if batches.telemetry or batches.ports or batches.host or batches.node_text:
                # The agents' batches, NIC ports and host readings beside GPU samples
                # (`kuae-agent run --fabric --host`).
                samples, readings, host = (
                    parse_telemetry_with_host(
                        {
                            "samples": batches.telemetry,
                            "ports": batches.ports,
                            "host": batches.host,
                        },
                        now=received,
                    )
                    if batches.telemetry or batches.ports or batches.host
                    else ([], [], [])
                )
                # node_exporter's text of the other nodes, one `?node=` post each.
                scraped_at = self.script.timeline.tick(sent)
                for name, text in batches.node_text.items():
                    _, ports, read = parse_exposition(text, ts=scraped_at, node=name)
                    readings += ports
                    host += read
                telemetry_batch_ingest(samples=samples, readings=readings, host=host, now=received)
            if batches.exposition:
                # The relay stamps what it scraped with the scrape time (`?ts=`).
                scraped = parse_dcgm(batches.exposition, ts=self.script.timeline.tick(sent))
                telemetry_ingest(samples=scraped, now=received)
            if batches.events:
                events = parse_event_batch({"events": batches.events}, now=received)
                events_ingest(events=events, now=received)
            for j, rows in batches.metrics.items():
                job_metrics_ingest(
                    job=self.jobs[j], samples=parse_metric_batch({"samples": rows}, now=received)
                )
        # Heartbeats, stamped with their receive time, in one write (as the simulator does).
        nodes_touch_bulk(rows=[(self.nodes[host].pk, at, at) for host, at in tick.beats])
