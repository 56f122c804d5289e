"""The registries apps above fill at start-up (`apps/common/lending.py`): the real start
fills every one, and one left empty fails loudly, by name, at start-up and when read."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.checks import run_checks
from django.core.exceptions import ImproperlyConfigured

from apps.accounts import scoping
from apps.common import lending, panels
from apps.fleet import readers as fleet_readers
from apps.fleet import transitions
from apps.incidents import alerts_out, silences
from apps.jobs import readers as job_readers
from apps.telemetry import monitored

ROOT = Path(__file__).resolve().parents[2]
REGISTRIES = {
    "apps.accounts.scoping",
    "apps.common.panels",
    "apps.fleet.readers",
    "apps.fleet.transitions",
    "apps.incidents.alerts_out",
    "apps.incidents.silences",
    "apps.jobs.readers",
    "apps.telemetry.monitored",
}


def _lending_errors() -> list[str]:
    return [m.msg for m in run_checks(tags=["kuae"]) if m.id == "common.E001"]


def test_the_real_start_up_fills_every_registry() -> None:
    assert {r.name for r in lending.registries()} >= REGISTRIES
    assert {r.name: r.unlent() for r in lending.registries() if r.name in REGISTRIES} == {
        name: [] for name in REGISTRIES
    }
    assert _lending_errors() == []


def test_every_registry_in_the_apps_is_known_at_start_up() -> None:
    """A registry declared in a module nobody imports at start-up would go unchecked: each
    app that owns one imports it from its own `ready()`."""
    declared = set()
    for path in (ROOT / "apps").rglob("*.py"):
        for name in re.findall(r'Registry\(\s*"([\w.]+)"', path.read_text()):
            declared.add(name)
    assert declared == REGISTRIES
    assert {r.name for r in lending.registries()} >= declared


@pytest.mark.parametrize(
    ("registry", "key", "read", "lender"),
    [
        (job_readers._lent, "mfu_lines", lambda: job_readers.mfu_lines(None), "the reports app"),
        (job_readers._lent, "job_incidents", lambda: job_readers.job_incidents([1]), "incidents"),
        (fleet_readers._lent, "busy_nodes", lambda: fleet_readers.busy_node_ids(1), "the jobs"),
        (silences._lent, "silence", lambda: silences.silenced([object()], None), "maintenance"),
        (scoping._lent, "is_scoped", lambda: scoping.is_scoped(object()), "the fleet app"),
        (monitored._lent, "needs", monitored.needed_fields, "the health app"),
        (monitored._lent, "event_kinds", monitored.event_kinds, "the health app"),
        (transitions._lent, "scheduler.actuation", transitions.followers, "the scheduler app"),
        (alerts_out._lent, "health.watchdog", lambda: alerts_out.alert_set(None), "health"),
        (
            panels._lent,
            panels.OVERVIEW,
            lambda: panels.render(slot=panels.OVERVIEW, cluster=None),
            "the maintenance app",
        ),
    ],
)
def test_a_registry_left_empty_fails_by_name(
    monkeypatch: pytest.MonkeyPatch, registry, key, read, lender
) -> None:
    monkeypatch.delitem(registry, key)
    said = f"{registry.name}: nothing was lent to {key!r}"
    with pytest.raises(ImproperlyConfigured, match=re.escape(said)) as raised:
        read()
    assert lender in str(raised.value)
    (error,) = _lending_errors()
    assert error.startswith(said) and lender in error


def test_a_forgotten_ready_stops_manage_py_check(tmp_path: Path) -> None:
    """The maintenance app installed but its `ready()` never run: `manage.py check` (and so
    `migrate` and `runserver`) refuses to start, naming what it should have lent."""
    (tmp_path / "forgetful.py").write_text(
        "from apps.maintenance.apps import MaintenanceConfig\n\n\n"
        "class Forgetful(MaintenanceConfig):\n"
        "    def ready(self) -> None:\n"
        "        pass\n"
    )
    (tmp_path / "forgetful_settings.py").write_text(
        "from kuaeweb.settings import *  # noqa: F403\n\n"
        'INSTALLED_APPS = ["forgetful.Forgetful" if a == "apps.maintenance" else a '
        "for a in INSTALLED_APPS]  # noqa: F405\n"
    )
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}")
    env["DJANGO_SETTINGS_MODULE"] = "forgetful_settings"
    done = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "apps.incidents.silences: nothing was lent to 'silence'; the maintenance app" in (
        done.stderr
    )
    assert "apps.common.panels: nothing was lent to 'overview'" in done.stderr
    assert done.stderr.count("common.E001") == 2
