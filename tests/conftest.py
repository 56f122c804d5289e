"""Shared fixtures: named personas per role, API clients with tokens, a small cluster."""

from __future__ import annotations

import datetime as dt
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from apps.accounts.models import ApiToken, User
from apps.accounts.services import user_create_or_update
from apps.fleet.models import Cluster, Node
from apps.fleet.services import NodeSpec, cluster_create, nodes_register
from apps.jobs.models import Job
from apps.jobs.services import job_create
from tests.support import ExporterServer


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove this run's own var/ folder (its SQLite file and filesystem broker)."""
    from django.conf import settings

    folder = Path(settings.VAR_DIR)
    if folder.name == f"test-{os.getpid()}":
        shutil.rmtree(folder, ignore_errors=True)


# Personas: one per role, as healthchecks does with alice, bob and charlie.
PERSONAS = {
    "mia": "manager",
    "otto": "operator",
    "erin": "engineer",
    "eve": "engineer",
    "ada": "agent",
    "root": "admin",
}


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
