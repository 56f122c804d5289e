"""The `stack` fixture of the fault tests: their own PostgreSQL and Redis, migrated, and
an App to start KUAE's processes on them (tests/faults/stack.py)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.faults.stack import PG_BIN, App, Postgres, Redis


@pytest.fixture
def stack() -> Iterator[tuple[Postgres, Redis, App]]:
    if not (PG_BIN / "initdb").exists() or not shutil.which("redis-server"):
        if os.environ.get("CI"):
            pytest.fail("CI needs PostgreSQL's server binaries and redis-server")
        pytest.skip("no PostgreSQL server binaries or redis-server here")
    # Not under pytest's tmp_path: its parents are private to root, and the server runs as
    # the postgres user.
    tmp_path = Path(tempfile.mkdtemp(prefix="kuae-faults-"))
    os.chmod(tmp_path, 0o755)
    (tmp_path / "var").mkdir()
    pg, redis = Postgres(tmp_path), Redis(tmp_path)
    pg.start()
    redis.start()
    app = App(tmp_path, pg, redis)
    try:
        with psycopg.connect(
            f"postgres://postgres@127.0.0.1:{pg.port}/postgres", autocommit=True
        ) as c:
            c.execute("CREATE DATABASE kuae")
        app.run("manage.py", "migrate", "--noinput", "-v0")
        yield pg, redis, app
    finally:
        app.stop_all()
        redis.stop()
        pg.stop()
        shutil.rmtree(tmp_path, ignore_errors=True)
