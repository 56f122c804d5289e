"""Checks are plug-ins (docs/checks.md, Writing a check): what each declares is valid, and
the schedule, run-now choices, pulls, notices and intake read those declarations."""

from __future__ import annotations

import dataclasses
import sys
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from apps.health import checks
from apps.health import models as health_models
from apps.health.checks import CHECKS, KIND_CHOICES, PLUGINS, SCHEDULED_KINDS, check_for
from apps.health.checks.fabric import NOT_MONITORED
from apps.health.detectors.findings import PORT, TARGET_TYPES, TargetType, declare_target
from apps.health.limits import FIELDS, Limits, limits_from
from apps.health.models import CheckRun, CheckSchedule
from apps.health.services import PULLED_METRICS, schedules_ensure
from apps.health.thresholds import Shared, threshold
from apps.incidents.choices import Category
from apps.telemetry import monitored
from apps.telemetry.host_kinds import HOST_KINDS
from apps.telemetry.host_series import pull_name
from apps.telemetry.models import TelemetryEvent
from apps.telemetry.names import DCGM_FIELDS, METRIC_NAMES
from apps.telemetry.ports import COUNTERS

pytestmark = pytest.mark.django_db


def test_every_declaration_is_valid():
    kinds = [spec.kind for spec in PLUGINS]
    assert len(kinds) == len(set(kinds)) and all(len(k) <= 32 for k in kinds)
    for spec in PLUGINS:
        assert spec.categories and all(c in Category.values for c in spec.categories)
        assert (
            TARGET_TYPES[spec.target.prefix] is spec.target
            and spec.label
            and 10 <= spec.interval_s <= 3600
        )
        for needed in spec.needs:
            names = METRIC_NAMES if needed.target == "gpu" else set(COUNTERS)
            assert needed.check == spec.kind and set(needed.metrics) <= names, needed
            assert needed.target in ("gpu", "port")
        if spec.scheduled:  # what it pulls is a dcgm field, a port's name or a host kind
            gpus, ports = set(DCGM_FIELDS.values()), {"state", "phys_state", "rate_gbps", *COUNTERS}
            hosts = {pull_name(kind) for kind in HOST_KINDS}
            assert spec.pulls <= (ports if spec.target == PORT else gpus | hosts), spec.kind
    # every threshold belongs to a registered check (or to all) and is bounded above
    for f in FIELDS:
        assert f.metadata["check"] in {"*", *CHECKS}, f.name
        assert f.metadata["hi"] is not None and f.metadata["hi"] > f.metadata["lo"], f.name
    assert {f.name for f in CHECKS["fabric"].thresholds} >= {"fabric_flaps_per_min"}


def test_each_check_declares_its_thresholds_in_its_own_module():
    """A plug-in's thresholds live in its module, the shared ones in thresholds.py, and
    `Limits` (what a run reads) holds every one of them once."""
    shared = {f.name for f in dataclasses.fields(Shared)}
    assert {f.name for f in FIELDS if f.metadata["check"] == "*"} == shared
    for spec in PLUGINS:
        assert spec.limits.__module__ == f"apps.health.checks.{spec.kind}", spec.kind
        assert spec.thresholds and all(f.metadata["check"] == spec.kind for f in spec.thresholds)
    declared_names = [f.name for spec in PLUGINS for f in spec.thresholds]
    assert sorted(declared_names + list(shared)) == sorted(f.name for f in FIELDS)
    assert {f.name for f in dataclasses.fields(Limits)} == {f.name for f in FIELDS}
    assert limits_from({"fabric_flaps_per_min": 7}).fabric_flaps_per_min == 7


def test_plugins_are_found_where_they_are_defined(tmp_path, monkeypatch):
    """No list to keep: a module dropped into the package is a plug-in, in its `order`; one
    without a SPEC, or a second of one kind, stops the start."""
    assert [s.kind for s in checks.discover()] == [s.kind for s in PLUGINS]
    assert [s.order for s in PLUGINS] == sorted(s.order for s in PLUGINS)
    assert {s.limits for s in PLUGINS} <= set(Limits.__mro__)
    monkeypatch.setattr(checks, "__path__", [*checks.__path__, str(tmp_path)])
    (tmp_path / "zz_extra.py").write_text(
        "import dataclasses\n"
        "from apps.health.checks import thermal\n"
        "SPEC = dataclasses.replace(thermal.SPEC, kind='zz_extra', order=5)\n"
    )
    found = checks.discover()
    assert found[0].kind == "zz_extra" and len(found) == len(PLUGINS) + 1
    (tmp_path / "zz_twice.py").write_text(
        "from apps.health.checks import thermal\nSPEC = thermal.SPEC\n"
    )
    with pytest.raises(TypeError, match="two plug-ins of one kind"):
        checks.discover()
    (tmp_path / "zz_twice.py").unlink()
    (tmp_path / "zz_bare.py").write_text("X = 1\n")
    with pytest.raises(TypeError, match="zz_bare declares no SPEC"):
        checks.discover()
    for name in ("zz_extra", "zz_twice", "zz_bare"):
        sys.modules.pop(f"apps.health.checks.{name}", None)


def test_thresholds_that_clash_stop_the_start():
    """`Limits` is made of the plug-ins' thresholds; a threshold that names another check,
    or one name declared by two checks, fails loudly instead of one quietly winning."""

    @dataclasses.dataclass(frozen=True)
    class Stray(Shared):
        stray_s: int = threshold(5, "Stray", "s", check="stray", lo=1, hi=10)

    @dataclasses.dataclass(frozen=True)
    class Misnamed(Shared):
        temp_c: float = threshold(90, "Hot", "°C", check="fabric", lo=1, hi=150)

    stray = dataclasses.replace(CHECKS["thermal"], kind="stray", limits=Stray)
    wide = checks.compose_limits((*PLUGINS, stray))
    assert wide(stray_s=7).stray_s == 7 and wide().hang_min_s == Limits().hang_min_s
    wrong = dataclasses.replace(stray, kind="thermal")
    with pytest.raises(TypeError, match="threshold stray_s of thermal names stray"):
        checks.compose_limits((*PLUGINS, wrong))
    twice = dataclasses.replace(CHECKS["thermal"], kind="fabric", limits=Misnamed)
    with pytest.raises(TypeError, match="declared twice"):
        checks.compose_limits((*PLUGINS, twice))


def test_a_target_type_is_owned_by_its_check_and_declared_once():
    """A check's own target type comes with its detector (its prefix, parsing and words); a
    second, different type of a taken prefix stops the start."""
    from apps.health.detectors import host_memory

    assert CHECKS["host_memory"].target is host_memory.MC is TARGET_TYPES["mc"]
    assert declare_target(TargetType("mc", "memory controller")) == host_memory.MC
    with pytest.raises(TypeError, match="declared twice"):
        declare_target(TargetType("mc", "memory card"))


def test_the_schedule_and_run_choices_come_from_the_registry(cluster):
    scheduled = tuple(spec.kind for spec in PLUGINS if spec.scheduled)
    assert scheduled == SCHEDULED_KINDS
    assert {"heartbeat", "fabric", "host_memory", "pcie", "clock", "storage"} <= set(
        SCHEDULED_KINDS
    )
    assert "fabric" in dict(KIND_CHOICES) and "preflight" in dict(KIND_CHOICES)
    with pytest.raises(ValueError, match="does not run on a schedule"):
        check_for("preflight")
    schedules_ensure()
    assert set(CheckSchedule.objects.values_list("kind", flat=True)) == set(SCHEDULED_KINDS)
    pulls = {k for k in SCHEDULED_KINDS if CHECKS[k].pulls}
    assert set(PULLED_METRICS) == pulls - {"pcie"}  # node_exporter publishes no PCIe series


def test_a_new_kind_needs_no_migration():
    """No column holds the list of kinds: a plug-in added or removed changes no model."""
    columns = [
        health_models.CheckRun._meta.get_field("kind"),
        health_models.CheckResult._meta.get_field("kind"),
        health_models.CheckSchedule._meta.get_field("kind"),
        TelemetryEvent._meta.get_field("kind"),
    ]
    assert all(not column.choices for column in columns)
    out = StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=out)  # SystemExit on changes
    assert "No changes detected" in out.getvalue()


def test_needs_and_event_kinds_are_lent_to_the_fleet():
    lent = monitored.needed_fields()
    assert lent == tuple(n for spec in PLUGINS for n in spec.needs if n.target == "gpu")
    assert [n.label for n in lent][:2] == ["ECC", "NVLink CRC"]
    ports = monitored.needed_fields("port")
    assert [n.metrics for n in ports][:2] == [("rnr_nak_retry_err",), ("local_ack_timeout_err",)]
    assert {n.check for n in ports} == {"fabric"}
    kinds = monitored.event_kinds()
    assert kinds["xid"].target == "gpu" and kinds["link_downed"].target == "port"
    monitored.lend(needs=lent)  # lending twice adds nothing
    assert monitored.needed_fields() == lent


def test_the_health_page_says_fabric_is_not_monitored_until_a_port_reports(
    api, client, users, nodes
):
    """A cluster whose ports never reported shows the fabric as not monitored, never as a
    pass; once one reports, the check judges it like any other."""
    client.force_login(users["otto"])
    html = client.get("/health/?cluster=c1").content.decode()
    assert "Fabric (NIC ports)" in html and str(NOT_MONITORED) in html and "Not monitored" in html
    reading = {
        "node": nodes[0].hostname,
        "device": "mlx5_0",
        "port": 1,
        "ts": timezone.now().isoformat(),
        "metrics": {"state": "4: ACTIVE", "link_downed": 0},
    }
    body = {"ports": [reading, {**reading, "device": "mlx5_1"}]}
    assert api("ada").post("/api/v1/ingest/telemetry/", body, format="json").status_code == 202
    html = client.get("/health/?cluster=c1").content.decode()
    assert str(NOT_MONITORED) not in html
    fabric_row = next(row for row in html.split("<tr>") if "Fabric (NIC ports)" in row)
    assert "Not monitored" not in fabric_row


def test_the_api_refuses_to_run_a_check_that_is_not_scheduled(api, cluster):
    body = {"cluster": "c1", "checks": ["preflight"]}
    response = api("otto").post("/api/v1/health/run/", body, format="json")
    assert response.status_code == 400 and "checks" in response.json()
    assert not CheckRun.objects.exists()


def test_a_ports_event_is_stored_once_and_named_when_wrong(api, cluster, nodes):
    url, now = "/api/v1/ingest/events/", timezone.now().replace(microsecond=0)
    event = {"node": nodes[0].hostname, "ts": now.isoformat(), "kind": "link_downed"}
    body = {"events": [{**event, "port": "mlx5_0/1"}]}
    for _ in range(2):
        assert api("ada").post(url, body, format="json").status_code == 202
    (stored,) = TelemetryEvent.objects.all()
    assert (stored.subject, stored.gpu, stored.value) == ("port:mlx5_0/1", None, 1.0)
    assert stored.kind_label == "Port link went down"
    for wrong, field in (
        ({**event}, "events[0].port"),
        ({**event, "port": "mlx5_0"}, "events[0].port"),
        ({**event, "kind": "fabric_melted", "port": "mlx5_0/1"}, "events[0].kind"),
        ({**event, "kind": "xid", "gpu": 0}, "events[0].code"),
    ):
        response = api("ada").post(url, {"events": [wrong]}, format="json")
        assert response.status_code == 400 and field in response.json(), (wrong, response.json())
    assert TelemetryEvent.objects.count() == 1


def test_a_stored_value_above_its_new_bound_is_taken_at_the_bound():
    limits = limits_from({"hang_min_s": 10**7, "temp_c": 500.0, "heartbeat_s": 0})
    assert limits.hang_min_s == 86_400 and limits.temp_c == 150.0
    assert limits.heartbeat_s == 180  # too low: ignored, the default stands


def test_run_now_refuses_a_kind_that_is_not_scheduled(client, users, cluster):
    client.force_login(users["otto"])
    response = client.post("/health/run/", {"cluster": "c1", "kind": "preflight"})
    assert response.status_code == 400 and b"kind" in response.content
    assert not CheckRun.objects.exists()


def test_a_gpus_event_of_a_declared_kind_is_stored_once(api, cluster, nodes, monkeypatch):
    kind = monitored.EventKind("gpu_reset_test", "GPU reset", "gpu")
    monkeypatch.setitem(monitored._lent["event_kinds"], kind.slug, kind)
    url, now = "/api/v1/ingest/events/", timezone.now().replace(microsecond=0)
    body = {
        "events": [
            {"node": nodes[0].hostname, "ts": now.isoformat(), "kind": "gpu_reset_test", "gpu": 0}
        ]
    }
    for _ in range(2):
        assert api("ada").post(url, body, format="json").status_code == 202
    (stored,) = TelemetryEvent.objects.filter(kind="gpu_reset_test")
    assert stored.subject == "gpu:0" and stored.gpu == 0
