"""The bounds on what one request may make the service do (docs/operations.md, Limits).

Each is checked before the work it bounds, and a request past one gets a 400 (or 413)
naming it; the README's "Limits" lists them with where each is enforced. Pure constants.
"""

from __future__ import annotations

# Slurm hostlists (`gpu[0001-2048]`): names all of one request's expressions may expand to,
# counted from their ranges before any name is made.
HOSTLIST_NAMES = 20_000
# Nodes one request may register (the Slurm intake creates the nodes its jobs name).
NEW_NODES = 2_000
# Nodes agents' intakes (Slurm records, telemetry) may register in one cluster in any hour;
# people registering nodes are not capped (apps.fleet.services.nodes_claim).
NEW_NODES_PER_HOUR = 2_000
# Incidents one Slurm intake request (`POST ingest/slurm/`, a sync, `import_slurm`) opens:
# its NODE_FAIL records fold into one incident per node first, and the records of groups past
# this bound open none (counted in the answer as `skipped`).
SLURM_INCIDENTS = 200
# Nodes one `POST nodes/topology/` may place (a whole fleet's switches, PDUs, NVLink domains).
TOPOLOGY_NODES = 20_000
# Kernel-log events (`ingest/events/`) agents may store for one node in any hour, and the
# unrouted Alertmanager alerts kept at once (a new fingerprint past it is counted, not kept).
EVENTS_PER_NODE_PER_HOUR = 10_000
UNROUTED_ALERTS_KEPT = 10_000
# Distinct metric names one GPU keeps (its latest values), whatever the intake.
METRIC_NAMES_PER_GPU = 200
# NIC ports one node has (device, port), and the metric names one port's reading may carry.
PORTS_PER_NODE = 64
METRIC_NAMES_PER_PORT = 64
# Subjects of host readings one node has, of every kind together (memory controllers, mounts,
# PCIe devices, clocks: apps/telemetry/host_kinds.py).
HOST_SUBJECTS_PER_NODE = 256
# Nesting of a JSON body (objects and arrays), for every JSON parser of the API.
JSON_DEPTH = 64
# Pages (incident notifications) sent per cluster per channel in any minute; past it a
# delivery is recorded as skipped, with the reason, instead of sent.
PAGES_PER_MINUTE = 30
# A hostname: a DNS name (RFC 1123 labels of at most 63 characters), at most this long.
HOSTNAME_LENGTH = 253

# Numbers a real cluster never reaches (docs/api.md, Conventions: "Bounds on numbers"):
# past one an intake answers 400 naming the field, so that every figure derived from what
# is stored (MFU, lost GPU-hours, checkpoint time) stays finite.
# Seconds: a checkpoint's `blocking_s`, a stall's `stalled_s`, a step's `step_time_s` (and
# its `compute_s`, part of a step) — 30 days.
DURATION_S = 30 * 86_400
# A job's parameters and FLOPs per token, and its tokens per second.
N_PARAMS = 1e14
FLOPS_PER_TOKEN = 1e16
TOKENS_PER_S = 1e12
# GPUs one job holds (2**20).
GPU_COUNT = 1_048_576
