"""A cluster's Prometheus as its telemetry source (docs/architecture.md, Telemetry sources).

A pull asks the cluster's `prometheus_url` one instant query (`apps.telemetry.promql`) of the
dcgm fields it needs, one of node_exporter's `node_infiniband_*` series for the NIC
ports' names it needs (`apps.telemetry.infiniband`), and one of node_exporter's host series
for the host kinds it needs (`apps.telemetry.host_series`) — the same ones at 2 nodes or
20,000 — and feeds the latest values it answers into the intake that posted telemetry goes
through (`telemetry_batch_ingest`).
The checks' loaders then read the same GPU rows and XID/counter events whichever way the
values came: an XID gauge that changed is an event, a counter that grew is one, a GPU whose
series vanished stops being fresh.

A server that does not answer — refused, timed out, a 5xx, an answer that is not JSON or
not a vector, an answer past `KUAE_PROMETHEUS_MAX_BYTES`, an address the destination policy
refuses (KUAE_SCRAPE_ALLOW, as for exporters) — raises `SourceDown` naming it; nothing is
written then.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections.abc import Collection, Iterable, Mapping
from typing import Any

import httpx
import orjson
from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q

from apps.fleet.destinations import DestinationRefused, Unresolvable, url_refusal
from apps.fleet.models import GPU, Cluster, Node
from apps.fleet.pinned import pinned_transport
from apps.telemetry.exporters import series_for
from apps.telemetry.host import HostReadingIn
from apps.telemetry.host_series import host_query, host_readings_of_vector, pulled_kinds
from apps.telemetry.infiniband import infiniband_query, instance_index, readings_of_vector
from apps.telemetry.intake import TelemetrySample
from apps.telemetry.ports import PortReading
from apps.telemetry.promql import (
    AnswerError,
    dcgm_query,
    host_index,
    matrix_of,
    node_counts,
    nodes_query,
    offenders_query,
    presence_query,
    samples_of,
    vector_of,
)
from apps.telemetry.services.host import HostIngestResult, telemetry_batch_ingest
from apps.telemetry.services.ports import PortIngestResult
from apps.telemetry.services.samples import IngestResult

QUERY_PATH = "/api/v1/query"
QUERY_RANGE_PATH = "/api/v1/query_range"


class SourceDown(Exception):
    """The telemetry source did not answer usefully; the message names it and says how."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"telemetry source {url} did not answer: {reason}")
        self.url = url
        self.reason = reason


def token_for(cluster: Cluster) -> str:
    """The bearer token for the cluster's Prometheus: its own (admin), else
    KUAE_PROMETHEUS_TOKEN; empty for none."""
    return cluster.prometheus_token or settings.KUAE_PROMETHEUS_TOKEN


def instant_query(
    url: str,
    query: str,
    *,
    at: dt.datetime,
    token: str = "",
    timeout_s: float | None = None,
    max_bytes: int | None = None,
) -> list[tuple[dict[str, str], float]]:
    """Evaluate `query` at `at` on the Prometheus-API server at `url` (one POST to
    /api/v1/query, so a long query never meets a URL length limit). The whole exchange is
    bounded by `timeout_s` and the answer by `max_bytes`; SourceDown otherwise."""
    form = {"query": query, "time": f"{at.timestamp():.3f}"}
    answer = _post(url, QUERY_PATH, form, token=token, timeout_s=timeout_s, max_bytes=max_bytes)
    try:
        return vector_of(answer)
    except AnswerError as exc:
        raise SourceDown(url, str(exc)) from exc


def range_query(
    url: str,
    query: str,
    *,
    start: dt.datetime,
    end: dt.datetime,
    step_s: int,
    token: str = "",
    timeout_s: float | None = None,
    max_bytes: int | None = None,
) -> list[tuple[dict[str, str], list[tuple[float, float]]]]:
    """Evaluate `query` from `start` to `end` every `step_s` seconds (one POST to
    /api/v1/query_range): the series as (labels, [(epoch s, value)]). The same bounds and
    the same SourceDown as `instant_query`."""
    form = {
        "query": query,
        "start": f"{start.timestamp():.3f}",
        "end": f"{end.timestamp():.3f}",
        "step": str(step_s),
    }
    answer = _post(
        url, QUERY_RANGE_PATH, form, token=token, timeout_s=timeout_s, max_bytes=max_bytes
    )
    try:
        return matrix_of(answer)
    except AnswerError as exc:
        raise SourceDown(url, str(exc)) from exc


def _post(
    url: str,
    path: str,
    form: dict[str, str],
    *,
    token: str,
    timeout_s: float | None,
    max_bytes: int | None,
) -> Any:
    """POST `form` to `url` + `path` within the bounds; the JSON answer of a 200, else
    SourceDown naming the server."""
    timeout_s = timeout_s or settings.KUAE_PROMETHEUS_TIMEOUT_S
    max_bytes = max_bytes or settings.KUAE_PROMETHEUS_MAX_BYTES
    # The URL's form here; its addresses once, when connecting, on the address connected to
    # (pinned: a name that rebinds after the check cannot redirect the query).
    refused = url_refusal(url, settings.KUAE_SCRAPE_ALLOW, resolve=False)
    if refused:
        raise SourceDown(url, f"KUAE may not connect there: {refused}")
    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    deadline = time.monotonic() + timeout_s
    try:
        with (
            httpx.Client(
                timeout=timeout_s,
                headers=headers,
                follow_redirects=False,
                trust_env=False,
                transport=pinned_transport(settings.KUAE_SCRAPE_ALLOW),
            ) as client,
            client.stream("POST", url.rstrip("/") + path, data=form) as response,
        ):
            body = _bounded_read(response, url, max_bytes, deadline)
    except DestinationRefused as exc:
        raise SourceDown(url, f"KUAE may not connect there: {exc}") from exc
    except Unresolvable as exc:
        raise SourceDown(url, f"ConnectError: {exc}") from exc
    except httpx.HTTPError as exc:
        raise SourceDown(url, f"{type(exc).__name__}: {exc}"[:500]) from exc
    answer = _json(body)
    if response.status_code != 200:
        said = answer.get("error") if isinstance(answer, dict) else None
        detail = f": {str(said)[:300]}" if said else ""
        raise SourceDown(url, f"HTTP {response.status_code}{detail}")
    if answer is None:
        raise SourceDown(url, "the answer is not JSON")
    return answer


def _bounded_read(response: httpx.Response, url: str, max_bytes: int, deadline: float) -> bytes:
    chunks, size = [], 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise SourceDown(url, f"the answer is larger than {max_bytes} bytes")
        if time.monotonic() > deadline:
            raise SourceDown(url, "the answer took longer than the timeout")
        chunks.append(chunk)
    return b"".join(chunks)


def _json(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return None


def pull_asks(metrics: Collection[str]) -> bool:
    """Whether a pull of `metrics` (KUAE's names) asks the server anything: a name an
    exporter's series fills, a port's name or a host kind node_exporter publishes. A check
    whose `pulls` ask nothing (`host:pcie`: node_exporter publishes no PCIe series) is not
    pulled, and its run does not claim the source answered."""
    return bool(
        series_for(metrics)
        or infiniband_query(metrics) is not None
        or host_query(pulled_kinds(metrics)) is not None
    )


@dataclasses.dataclass(frozen=True)
class PullPlan:
    """A pull with the check's thresholds in the query (docs/integrations.md, 2d: thresholds
    in the query): `over` is KUAE name → the limit at or over which a GPU must be read;
    `read` the nodes whose GPUs must be read whatever their values (those whose stored
    values or results could not give the verdict unread). The GPUs of other nodes are
    read only when a value is past a threshold; a node whose GPUs all report is marked as
    reporting (its GPUs' `updated_at`, its `last_seen_at`) without its values."""

    over: Mapping[str, float]
    read: frozenset[str]


def prometheus_pull(
    cluster: Cluster,
    *,
    now: dt.datetime,
    metrics: Collection[str] | None = None,
    plan: PullPlan | None = None,
) -> tuple[IngestResult, PortIngestResult, HostIngestResult]:
    """Read the latest values of the cluster's GPUs, NIC ports and host readings from its
    Prometheus and store them as posted telemetry is stored (values, events, rollups, the
    nodes' last_seen_at; each port's and each host subject's latest and previous reading),
    together or not at all.

    `metrics` are KUAE's names (None: every one). The exporters' series that fill them
    (dcgm-exporter's, AMD's, Gaudi's: apps.telemetry.exporters) are one query (with one
    series per exporter carrying the GPU's identity); the ports' among them
    (`state`, `link_downed` …) one query of node_exporter's series; the host kinds among
    them (`host:memory`, `host:filesystem` …: apps.telemetry.host_series.pull_name) one
    query of node_exporter's host series; a query that would ask for nothing is not asked.
    With a `plan`, the GPU fields are asked as `PullPlan` says (three queries, whatever
    the cluster's size). SourceDown when the server does not answer; nothing is written
    then."""
    samples: list[TelemetrySample] = []
    fields = None if metrics is None else series_for(metrics)
    marked: list[int] = []
    if plan is not None and fields:
        samples, marked = _pushdown(cluster, fields, plan, now)
    elif metrics is None or fields:
        known = set(
            GPU.objects.filter(node__cluster=cluster).values_list("node__hostname", "index")
        )
        vector = _pull_query(cluster, dcgm_query(fields), now)
        hosts = host_index({host for host, _ in known})
        samples = samples_of(vector, hosts=hosts, known=known, ts=now)
    readings: list[PortReading] = []
    host: list[HostReadingIn] = []
    ports_query = infiniband_query(metrics)
    kinds = pulled_kinds(metrics)
    readings_query = host_query(kinds)
    if ports_query is not None or readings_query is not None:
        nodes = list(Node.objects.filter(cluster=cluster).values_list("hostname", "addresses"))
        instances = instance_index(
            (h for h, _ in nodes), ((h, a) for h, addresses in nodes for a in addresses or ())
        )
        if ports_query is not None:
            vector = _pull_query(cluster, ports_query, now)
            readings = readings_of_vector(vector, hosts=instances, ts=now)
        if readings_query is not None:
            vector = _pull_query(cluster, readings_query, now)
            host = host_readings_of_vector(vector, hosts=instances, ts=now, kinds=kinds)
    with transaction.atomic():
        stored = telemetry_batch_ingest(samples=samples, readings=readings, host=host, now=now)
        if marked:  # reporting, values unread: as a pull that read them would mark them
            fresh = GPU.objects.filter(node_id__in=marked)
            fresh.filter(Q(updated_at__lt=now) | Q(updated_at__isnull=True)).update(updated_at=now)
            Node.objects.filter(pk__in=marked).update(last_seen_at=now)
    return stored


def _pushdown(
    cluster: Cluster, fields: list[str], plan: PullPlan, now: dt.datetime
) -> tuple[list[TelemetrySample], list[int]]:
    """The samples `plan` has read (the GPUs past a threshold, every GPU of its `read`
    nodes and of the nodes a count cannot vouch for) and the ids of the other nodes whose
    every stored GPU reports a value (to be marked as reporting). Three instant queries:
    a GPU count per node, the offenders, the nodes to read (not asked when none)."""
    gpus = list(GPU.objects.filter(node__cluster=cluster).values_list("node__hostname", "index"))
    known = set(gpus)
    hosts = host_index({host for host, _ in known})
    stored = dict(
        Node.objects.filter(cluster=cluster)
        .annotate(n=Count("gpus"))
        .filter(n__gt=0)
        .values_list("hostname", "n")
    )
    counts = node_counts(
        _pull_query(cluster, presence_query(fields, {i for _, i in gpus}), now), hosts
    )
    # A node answered with its stored count reports every GPU; one answered with fewer,
    # more (indexes KUAE does not know are not counted) or twice is read GPU by GPU.
    vouched = {h for h, n in counts.items() if n is not None and n == stored.get(h)}
    read = set(plan.read) | (set(counts) - vouched)
    vector = _pull_query(cluster, offenders_query(fields, plan.over), now)
    if read:
        vector += _pull_query(cluster, nodes_query(fields, read), now)
    samples = samples_of(vector, hosts=hosts, known=known, ts=now)
    marked = list(
        Node.objects.filter(cluster=cluster, hostname__in=vouched - read).values_list(
            "pk", flat=True
        )
    )
    return samples, marked


def _pull_query(cluster: Cluster, query: str, now: dt.datetime) -> list[tuple[dict, float]]:
    return instant_query(
        cluster.prometheus_url,
        query,
        at=now,
        token=token_for(cluster),
        timeout_s=settings.KUAE_PROMETHEUS_PULL_TIMEOUT_S,
    )


def prometheus_latest(
    cluster: Cluster, *, fields: Iterable[str], now: dt.datetime
) -> list[TelemetrySample]:
    """The latest values of `fields` (any exporter's series: `series_for`) of the cluster's
    GPUs, read with one instant query and named as posted telemetry names them, without
    storing anything (the fleet view's GPU rankings). Each sample's model is its exporter's
    identity label (asked of one series per exporter, as a pull does), else the stored GPU's
    (which may be blank: the cluster's). SourceDown when the server does not answer."""
    url = cluster.prometheus_url
    stored = GPU.objects.filter(node__cluster=cluster).values_list(
        "node__hostname", "index", "model"
    )
    models = {(host, index): model for host, index, model in stored}
    vector = instant_query(url, dcgm_query(fields), at=now, token=token_for(cluster))
    hosts = host_index({host for host, _ in models})
    samples = samples_of(vector, hosts=hosts, known=models, ts=now)
    return [
        s if s.model else dataclasses.replace(s, model=models.get((s.node, s.gpu), ""))
        for s in samples
    ]
