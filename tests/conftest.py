"""Shared fixtures: named personas per role, API clients with tokens, a small cluster."""

from __future__ import annotations

import datetime as dt
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import timezone
from rest_framework.test import APIClient

from apps.accounts.models import ApiToken, User
from apps.accounts.services import user_create_or_update
from apps.fleet.models import Cluster, Node
from apps.fleet.services import NodeSpec, cluster_create, nodes_register
from apps.jobs.models import Job
from apps.jobs.services import job_create
from tests.support import ExporterServer

try:  # make test's (the dev lock's); a pytest without it runs the suite in one process
    from xdist.scheduler import LoadScopeScheduling
except ImportError:
    LoadScopeScheduling = None


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist a module stays on one worker (`--dist loadscope`, as `make test`
    runs it), so its module fixtures are set up once — the Slurm lab's ports are fixed: two
    workers must not start it at once. (`loadgroup` would not do: with pytest 9.2 it no
    longer groups, pytest-xdist issue 1386.)"""
    if getattr(config.option, "numprocesses", None) and config.option.dist != "loadscope":
        raise pytest.UsageError("run the suite with --dist loadscope (see the Makefile's test)")
    if hasattr(config, "workerinput"):
        config.pluginmanager.register(_SlowFirst(), "kuae-slow-first")


if LoadScopeScheduling is not None:

    class _Scheduling(LoadScopeScheduling):
        """`--dist loadscope`, but each browser test (tests/e2e, no module fixtures) is a
        unit of its own, so the slow ones (every page as every role) run side by side."""

        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return nodeid if module.startswith("tests/e2e/") else module

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> _Scheduling | None:
        """The scheduler of `make test`'s `--dist loadscope`."""
        return _Scheduling(config, log) if config.option.dist == "loadscope" else None


# The slowest units, handed out first so that none is left running alone at the end:
# browser tests and the fault test (make test hands units out in collection order:
# --no-loadscope-reorder).
SLOW_FIRST = ("tests/e2e/", "tests/faults/")


class _SlowFirst:
    """In an xdist worker, the SLOW_FIRST tests first, after pytest-django has ordered the
    rest (in one process pytest-django's order stands: transactional tests last)."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        items.sort(key=lambda item: not item.nodeid.startswith(SLOW_FIRST))


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove this run's own var/ folder (its SQLite file and filesystem broker), or an xdist
    worker's own folder inside it (kuaeweb/settings_test.py)."""
    from django.conf import settings

    folder = Path(settings.VAR_DIR)
    if folder.name == os.environ.get("PYTEST_XDIST_WORKER"):
        shutil.rmtree(folder, ignore_errors=True)
        folder = folder.parent
    if folder.name == f"test-{os.getpid()}":
        shutil.rmtree(folder, ignore_errors=True)


# The modules `make test` runs again on the embedded default (SQLite, filesystem broker) after
# a whole run on PostgreSQL/Redis, besides the tests marked `embedded` one by one (the
# no-variables start, the simulator, real Celery workers over the filesystem broker): those
# that drive what is written differently for SQLite. Together they cover every line of the
# modules holding such code (apps/common bulk, sql, dbfuncs, partitions, partition_tables,
# retention, errors, filters and the partitions command; fleet's telemetry and nodes
# services, reports/gpu_fleet, jobs/intake, health/inputs; kuaeweb settings and celery) that
# the whole suite covers on SQLite, but for the Prometheus source's path, which is not
# SQLite's (measured with coverage.py per test). A new SQLite branch needs its module here.
EMBEDDED = {
    "tests/common/test_bulk.py": "bulk writes: executemany, SQLite's upsert, JSON `among`",
    "tests/common/test_partitions.py": "plain tables instead of partitions, batched retention",
    "tests/common/test_bounds.py": "integers past 64 bits, which SQLite refuses to bind",
    "tests/common/test_sorting.py": "sort fields over SQLite's ordering",
    "tests/fleet/test_topology.py": "ids of just-inserted nodes (SQLite < 3.35 returns none)",
    "tests/fleet/test_addresses.py": "node registration's writes",
    "tests/fleet/test_api.py": "node registration and updates over the API",
    "tests/telemetry/test_samples.py": "telemetry intake: GPU reads and merges per backend",
    "tests/telemetry/test_events.py": "event inserts that skip duplicates",
    "tests/telemetry/test_gpu_charts.py": "GPU ranking's byte-order collation, rollup charts",
    "tests/health/test_detection_quality.py": "check inputs: JSON values and epochs from SQLite",
    "tests/health/test_blast.py": "check inputs per node",
    "tests/health/test_candidates.py": "candidates chosen in SQL: JSON numbers, targets",
    "tests/health/test_host_candidates.py": "host checks' candidates: readings' JSON compared",
    "tests/jobs/test_api.py": "step metrics: epoch SQL, NaN kept as text, retention",
    "tests/reports/test_plain_words.py": "error pages for values SQLite cannot bind",
    "tests/scheduler/test_intake.py": "bulk updates from Slurm's accounting",
    "tests/incidents/test_alertmanager_races.py": "concurrent writers: WAL, IMMEDIATE",
    # Model moves between apps: SQLite rebuilds and renames tables its own way.
    "tests/fleet/test_agent_scope_move.py": "a model moved between apps, on SQLite",
    "tests/scheduler/test_actuation_move.py": "a model moved between apps, on SQLite",
    "tests/scheduler/test_node_state_move.py": "columns moved to another app's table, on SQLite",
    "tests/telemetry/test_move_from_fleet.py": "models moved between apps, on SQLite",
    "tests/scheduler/test_intake_races.py": "concurrent writers: WAL, IMMEDIATE",
    "tests/incidents/test_alerts_soon.py": "the alerts-out round read off the filesystem broker",
}


# The modules marked `slow`, besides every browser test (tests/e2e) and the fault tests
# (tests/faults): those that start real peers, workers or subprocesses. `make test-quick`
# leaves them out (the README, Developing); `make test` and CI run them all.
SLOW = {
    "tests/accounts/test_ldap_signin.py": "a real slapd per test",
    "tests/oidc/test_signin_flow.py": "a real OpenID provider (Node.js) and a live server",
    "tests/agent/test_agent.py": "kuae-agent against a live server",
    "tests/agent/test_report.py": "the Reporter against a live server, through outages",
    "tests/agent/test_callbacks.py": "Hugging Face and Lightning training loops",
    "tests/agent/test_stacks.py": "real py-spy on real Python processes",
    "tests/agent/test_watchdog.py": "ranks' watchdogs in subprocesses",
    "tests/health/test_hang_gloo.py": "a real torch.distributed job (gloo) that hangs",
    "tests/health/test_prometheus_real.py": "a real Prometheus and node_exporter",
    "tests/health/test_host_checks_prometheus.py": "a real Prometheus and node_exporter",
    "tests/health/test_prometheus_pushdown.py": "a real Prometheus and VictoriaMetrics",
    "tests/health/test_fabric_real.py": "a real node_exporter on fake sysfs trees",
    "tests/health/test_cluster_queues.py": "real Celery workers",
    "tests/health/test_queue_part.py": "real Celery workers",
    "tests/health/test_detection_quality.py": "simulated fleets, scripted faults, several seeds",
    "tests/incidents/test_alertmanager_real.py": "a real Alertmanager",
    "tests/incidents/test_alerts_out_real.py": "a real Alertmanager and Celery worker",
    "tests/scheduler/test_slurm_real.py": "a real two-node Slurm",
    "tests/telemetry/test_node_exporter_host.py": "a real node_exporter on fake trees",
    "tests/telemetry/test_prometheus_ports.py": "a real Prometheus and node_exporter",
    "tests/test_celery_worker.py": "real Celery workers and beat",
}


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects (and pytest-django orders the rest)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the EMBEDDED modules' tests `embedded`, the SLOW ones and SLOW_FIRST's `slow`.
    Within a module, the tests that read `module_rows` take the module's last places: the
    rows stay until the module ends, and a test that expects an empty database must not
    meet them."""
    places: dict[str, list[int]] = {}
    for index, item in enumerate(items):
        module = item.nodeid.split("::")[0]
        if module in EMBEDDED:
            item.add_marker(pytest.mark.embedded)
        if module in SLOW or module.startswith(SLOW_FIRST):
            item.add_marker(pytest.mark.slow)
        places.setdefault(module, []).append(index)
    for indexes in places.values():
        tests = [items[i] for i in indexes]
        tests.sort(key=lambda item: "module_rows" in getattr(item, "fixturenames", ()))
        for index, item in zip(indexes, tests, strict=True):
            items[index] = item


# Personas: one per role, as healthchecks does with alice, bob and charlie.
PERSONAS = {
    "mia": "manager",
    "otto": "operator",
    "erin": "engineer",
    "eve": "engineer",
    "ada": "agent",
    "root": "admin",
}


@pytest.fixture(autouse=True)
def _cold_cache() -> None:
    """Each test starts with the process's cache empty: a page's query count (the pipeline
    banner's status is cached 10 s) must not depend on what ran before it on this worker."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture(autouse=True)
def _default_language() -> Iterator[None]:
    """Each test starts in the default language: a page request activates its reader's
    language in the thread that served it (Django's LocaleMiddleware and ours do not undo
    it), and a later test on this worker that words a status outside a request would
    otherwise speak Chinese (seen in CI: the pipeline banner's words after a zh-hans page)."""
    from django.utils import translation

    translation.deactivate()
    yield
    translation.deactivate()


@pytest.fixture(scope="module")
def module_rows(django_db_setup, django_db_blocker) -> Iterator[Callable[..., object]]:  # noqa: ANN001
    """`module_rows(write, **options)` writes rows that every test of a module reads, once
    for the module instead of once a test (a simulated cluster takes seconds to write): they
    are committed, and each test still runs in its own transaction, rolled back at its end, so
    no test sees another's writes. When the module ends the database is flushed, as a
    transactional test leaves it; the module's other tests run before the first that asks
    for them (`pytest_collection_modifyitems`). Not for a module with transactional tests
    (their flush would take the rows away halfway)."""
    wrote = False

    def write(make: Callable[..., object], **options: object) -> object:
        nonlocal wrote
        wrote = True
        with django_db_blocker.unblock():
            return make(**options)

    yield write
    if wrote:
        with django_db_blocker.unblock():
            call_command("flush", interactive=False, verbosity=0)


@pytest.fixture
def users(db) -> dict[str, User]:  # noqa: ANN001
    """The personas, created with password 'pw' (past the password policy, which
    tests/accounts/test_hardening.py tests)."""
    return {
        name: user_create_or_update(username=name, role=role, password="pw", check_password=False)
        for name, role in PERSONAS.items()
    }


@pytest.fixture
def api(users: dict[str, User]) -> Callable[[str | None], APIClient]:
    """`api("otto")` → an API client authenticated with a new token of otto's; `api(None)` →
    anonymous. (The model's issue, one INSERT: unlike `token_issue` it leaves the persona's
    other tokens live, so a test may hold several clients.)"""

    def make(name: str | None) -> APIClient:
        client = APIClient()
        if name is not None:
            client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(users[name])}")
        return client

    return make


@pytest.fixture
def cluster(db) -> Cluster:  # noqa: ANN001
    """An H100 cluster with 8 GPUs per node."""
    return cluster_create(name="c1", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8)


@pytest.fixture
def nodes(cluster: Cluster) -> list[Node]:
    """Eight nodes in two racks, in service for 30 days."""
    start = timezone.now() - dt.timedelta(days=30)
    return nodes_register(
        cluster=cluster,
        specs=[
            NodeSpec(hostname=f"gpu{i:03d}", rack=f"r{i // 4}", in_service_at=start)
            for i in range(8)
        ],
    )


@pytest.fixture
def job(cluster: Cluster, nodes: list[Node]) -> Job:
    """A running 70B job on the first four nodes."""
    created, _ = job_create(
        cluster=cluster,
        nodes=nodes[:4],
        name="llama-70b",
        n_params=70e9,
        gpu_count=32,
        status="running",
        started_at=timezone.now() - dt.timedelta(days=2),
    )
    return created


@pytest.fixture
def exporter() -> Iterator[str]:
    """Base URL of a loopback server: /metrics (the real dcgm sample), /slow, /broken, /missing."""
    server = ExporterServer()
    yield server.url
    server.close()
