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
# Nesting of a JSON body (objects and arrays), for every JSON parser of the API.
JSON_DEPTH = 64
# Pages (incident notifications) sent per cluster per channel in any minute; past it a
# delivery is recorded as skipped, with the reason, instead of sent.
PAGES_PER_MINUTE = 30
# A hostname: a DNS name (RFC 1123 labels of at most 63 characters), at most this long.
HOSTNAME_LENGTH = 253
