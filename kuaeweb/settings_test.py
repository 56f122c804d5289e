"""Settings for the test suite: the real settings, with test-only defaults."""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("KUAE_TESTING", "1")
os.environ.setdefault("DJANGO_HTTPS", "0")
# The tests' stand-in exporters listen on loopback, which the scraper refuses unless listed
# (tests of the refusal itself override this).
os.environ.setdefault("KUAE_SCRAPE_ALLOW", "127.0.0.0/8")
# Each test run keeps its SQLite file and filesystem broker in a folder of its own, so two
# runs at once (two checkouts' worth of work on one machine) never share a database. Set
# in the environment, so the worker and server processes a test starts find the same one.
# (Only under pytest: other tools that load these settings, like mypy's plugin, use var/.)
# Under pytest-xdist (make test) each worker inherits the run's folder and takes a folder of
# its own inside it, named for the worker (gw0, gw1, …): the processes it starts inherit that.
if "pytest" in sys.modules:
    _run_dir = os.environ.setdefault(
        "KUAE_VAR_DIR", str(Path(__file__).resolve().parent.parent / "var" / f"test-{os.getpid()}")
    )
    _worker = os.environ.get("PYTEST_XDIST_WORKER")
    if _worker and Path(_run_dir).name != _worker:
        os.environ["KUAE_VAR_DIR"] = str(Path(_run_dir) / _worker)

from kuaeweb.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
