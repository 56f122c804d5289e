"""No GET writes: every page and every API GET, read as every role over a simulated
cluster, leaves every table as it was — a drain's repair is opened by the beat, not by the
page that shows it (docs/repairs.md).

Two witnesses: each request's SQL is watched for writes (so a failure names the URL and
the statement), and every table is checksummed before and after the walk (so a write the
watch cannot see still fails). The one kind of row a GET may add is the audit log's record
of a refused request (a 403, written by accounts' AuditDenialsMiddleware); the session row
a signed-in browser keeps alive is the sign-in's own, not a page's, and is left out."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from apps.accounts.models import AuditEvent
from apps.fleet.choices import NodeState
from apps.fleet.models import Cluster, Node
from apps.fleet.services import node_set_state
from apps.health.models import CheckRun
from apps.health.services import runs_request
from apps.incidents.models import ActionItem, Incident
from apps.incidents.postmortems import ActionSpec, postmortem_save
from apps.jobs.models import Job
from apps.jobs.rank_intake import RankItem, StallReport
from apps.jobs.ranks import ranks_register, stalls_ingest
from apps.jobs.stacks import Frame, stack_of
from apps.maintenance.services import Booking, window_book
from apps.repairs.models import Repair
from apps.repairs.services import repairs_tick
from tests.support import simulate

pytestmark = pytest.mark.django_db

ROLES = (None, "mia", "otto", "erin", "ada", "root")  # anonymous and every role
SKIP = {"logout"}  # signs the walker out: a write by design, and not a GET
LEFT_OUT = {"django_session"}  # a signed-in browser's session, kept alive by any request
WRITES = ("insert", "update", "delete", "replace")
AUDITS = "accounts_auditevent"
AUDIT = f'INSERT INTO "{AUDITS}"'


def _patterns(resolver: URLResolver) -> Iterator[URLPattern]:
    for p in resolver.url_patterns:
        if isinstance(p, URLResolver):
            if getattr(p, "app_name", None) != "admin":
                yield from _patterns(p)
        elif isinstance(p, URLPattern) and p.name and p.name not in SKIP:
            yield p


def _args(name: str, params: list[str], ids: dict[str, Any]) -> dict[str, Any]:
    """Real objects for the pattern's parameters, chosen by what the pattern is about."""
    pk_of = (
        ("repair", "repair"),
        ("maintenance", "window"),
        ("health-run", "run"),
        ("incident", "incident"),
        ("postmortem", "incident"),
        ("job", "job"),
    )
    out: dict[str, Any] = {}
    for param in params:
        if param == "pk":
            out["pk"] = next(ids[key] for part, key in pk_of if part in name)
        elif param == "hostname":
            out["hostname"] = ids["hostname"]
        elif param == "name":
            out["name"] = ids["cluster"]
        elif param == "item_id":
            out["item_id"] = ids["item"]
        elif param == "step":
            out["step"] = "submit"
        elif param == "fmt":
            out["fmt"] = "csv"
    return out


def _urls(ids: dict[str, Any]) -> list[str]:
    """Every URL pattern reversed with real objects, and the query strings the pages poll
    or are linked with."""
    resolver = get_resolver()
    urls = []
    for pattern in _patterns(resolver):
        params = resolver.reverse_dict.getlist(pattern.name)[0][0][0][1]
        urls.append(reverse(pattern.name, kwargs=_args(pattern.name, params, ids)))
    c, host = ids["cluster"], ids["hostname"]
    urls += [
        f"/?cluster={c}",
        f"/?cluster={c}&panel=1",
        f"/nodes/{host}/?range=7d",
        f"/nodes/{ids['opening']}/",  # drained a moment ago: its repair not opened yet
        f"/nodes/?cluster={c}&state=drained",
        f"/health/?cluster={c}",
        f"/reliability/?cluster={c}&days=7",
        f"/repairs/?cluster={c}",
        "/reports/weekly.pdf",
        "/reports/weekly.zip",
        f"/search/?q={host[:4]}",
        f"/api/v1/repairs/?cluster={c}&status=open",
        f"/api/v1/nodes/?cluster={c}",
        f"/api/v1/reports/weekly/?cluster={c}",
    ]
    return urls


def _checksums() -> dict[str, tuple[int, str]]:
    """table → (rows, a digest of every row, in no particular order)."""
    out = {}
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            if table in LEFT_OUT:
                continue
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            digests = sorted(hashlib.sha1(repr(row).encode()).hexdigest() for row in cursor)
            out[table] = (len(digests), hashlib.sha1("".join(digests).encode()).hexdigest())
    return out


@contextmanager
def _watch(found: list[str]) -> Iterator[None]:
    """Note every statement that writes (or locks rows to write them) in `found`."""

    def wrapper(execute: Callable, sql: str, params: Any, many: bool, context: Any) -> Any:  # noqa: ANN401
        text = sql.lstrip().lower()
        if (text.startswith(WRITES) or " for update" in text) and "django_session" not in text:
            found.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        yield


def _ranks_of(job: Job | None) -> None:
    """Two registered ranks of `job`, one stalled in a collective: what `GET
    jobs/{id}/ranks/` reads (and judges) without writing."""
    assert job is not None
    now = timezone.now()
    host = job.nodes.values_list("hostname", flat=True).first() or Node.objects.first().hostname
    started = now - dt.timedelta(hours=1)
    ranks_register(
        job=job,
        items=[RankItem(r, 2, host, r, 100 + r, started) for r in range(2)],
        now=now,
    )
    frames = (
        Frame("/home/u/train.py", "train_step", 88),
        Frame("/x/site-packages/torch/distributed/distributed_c10d.py", "all_reduce", 2501),
    )
    stall = StallReport(job.pk, host, now, 0, 120, 90.0, stack_of(frames), True, False, 2)
    stalls_ingest(reports=[stall], user=None, now=now)


@pytest.fixture
def world(users: dict[str, Any]) -> dict[str, Any]:
    """A simulated cluster with what every page has to show: jobs, incidents with a
    postmortem and an action item, check runs, a maintenance window, repairs (opened by the
    beat's tick), and a node drained a moment ago whose repair the next tick opens."""
    simulate(gpus=64, days=3, seed=7, failure_rate=0.5)
    cluster = Cluster.objects.get()
    node = Node.objects.filter(cluster=cluster).order_by("hostname").first()
    assert node is not None
    runs_request(cluster=cluster, kinds=["heartbeat"], requested_by="t")
    start = timezone.now() + dt.timedelta(days=2)
    window = window_book(
        booking=Booking(
            cluster=cluster,
            start=start,
            end=start + dt.timedelta(hours=4),
            reason="firmware",
            nodes=[node.hostname],
        ),
        by="t",
    )
    node_set_state(node=node, state=NodeState.DRAINED, reason="XID 79 on GPU 3", by="otto")
    repairs_tick()  # as the beat does
    opening = Node.objects.filter(cluster=cluster, state=NodeState.HEALTHY).order_by("hostname")
    late = opening.last()
    assert late is not None
    node_set_state(node=late, state=NodeState.DOWN, reason="no heartbeat for 400 s", by="t")
    incident = Incident.objects.order_by("id").first()
    assert incident is not None and Job.objects.exists() and Repair.objects.exists()
    postmortem_save(
        incident=incident,
        by=users["erin"],
        summary="GPU 3 fell off the bus",
        root_cause="a loose riser",
        category=incident.category,
        timeline=[],
        contributing_factors="",
        action_items=[ActionSpec(text="reseat the risers", owner="otto")],
    )
    item = ActionItem.objects.get()
    _ranks_of(Job.objects.order_by("id").first())
    return {
        "cluster": cluster.name,
        "hostname": node.hostname,
        "opening": late.hostname,
        "incident": incident.pk,
        "item": item.pk,
        "job": Job.objects.order_by("id").values_list("pk", flat=True).first(),
        "window": window.pk,
        "run": CheckRun.objects.order_by("id").values_list("pk", flat=True).first(),
        "repair": Repair.objects.order_by("id").values_list("pk", flat=True).first(),
    }


def test_no_page_or_api_get_writes_as_any_role(users, world):
    urls = _urls(world)
    clients = {role: Client() for role in ROLES}
    for role, client in clients.items():
        if role is not None:
            client.force_login(users[role])  # a sign-in writes (its session, the audit log)
    before = _checksums()
    audits = AuditEvent.objects.count()
    writes: list[str] = []
    refused = 0
    seen: dict[str, set[int]] = {}
    for role, client in clients.items():
        for url in urls:
            found: list[str] = []
            with _watch(found):
                response = client.get(url)
            status = response.status_code
            assert status < 500, f"GET {url} as {role}: {status}"
            seen.setdefault(url, set()).add(status)
            if status == 403:  # accounts' audit log records the refusal, once
                refused += 1
                audit = [s for s in found if s.lstrip().startswith(AUDIT)]
                assert len(audit) == 1, f"GET {url} as {role}: {audit}"
                found = [s for s in found if s not in audit]
            writes += [f"GET {url} as {role or 'anonymous'}: {s[:300]}" for s in found]
    assert not writes, "\n".join(writes)
    after = _checksums()
    assert AuditEvent.objects.filter(kind=AuditEvent.Kind.DENIED).count() == refused
    assert AuditEvent.objects.count() - audits == refused
    before.pop(AUDITS), after.pop(AUDITS)
    changed = {t for t in set(before) | set(after) if before.get(t) != after.get(t)}
    assert changed == set(), {t: (before.get(t), after.get(t)) for t in changed}
    # the walk read real pages, not a wall of 404s and refusals
    pages = [f"/nodes/{world['hostname']}/", f"/nodes/{world['opening']}/", "/repairs/"]
    ranks = f"/api/v1/jobs/{world['job']}/ranks/"  # judged as read: its rows are there
    assert all(200 in seen[u] for u in [*pages, f"/api/v1/repairs/{world['repair']}/", ranks])
    assert sum(200 in codes for codes in seen.values()) > 60
    opening = clients["mia"].get(f"/nodes/{world['opening']}/").content.decode()
    assert "data-repair-opening" in opening  # shown as being opened, and still not written
    assert not Repair.objects.filter(node__hostname=world["opening"], status="open").exists()
