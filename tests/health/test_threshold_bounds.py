"""Every threshold has an upper bound where it is saved, and no stored value can stop a
check run (issue 32: `heartbeat_s=1e23` ended every gpu_errors run in OverflowError)."""

from __future__ import annotations

import json

import pytest

from apps.health.checks import SCHEDULED_KINDS
from apps.health.forms import ThresholdsForm
from apps.health.limits import DEFAULTS, FIELDS, limits_from
from apps.health.models import CheckRun, Thresholds
from apps.health.services import runs_execute_now

pytestmark = pytest.mark.django_db

HIGHEST = {f.name: f.metadata["hi"] for f in FIELDS}


def test_the_form_refuses_1e23_naming_the_field_and_its_bound(client, users, cluster):
    client.force_login(users["otto"])
    form = ThresholdsForm(instance=Thresholds(cluster=cluster)).initial
    for name, value in (("heartbeat_s", "1e23"), ("temp_c", "1e23"), ("temp_c", "inf")):
        page = client.post(
            "/health/thresholds/", {**form, "cluster": "c1", name: value}, follow=True
        ).content.decode()
        assert "Thresholds not saved" in page and name in page, page
        assert f"{HIGHEST[name]:g}" in page  # the bound is named
        assert not Thresholds.objects.filter(values__has_key=name).exists()


@pytest.mark.parametrize(
    ("values", "name", "bound"),
    [
        ('{"heartbeat_s": 1e23}', "heartbeat_s", "86400"),
        ('{"heartbeat_s": Infinity}', "heartbeat_s", "86400"),
        ('{"temp_c": NaN}', "temp_c", "150"),
        ('{"temp_c": 1' + "0" * 400 + "}", "temp_c", "150"),
        ('{"heartbeat_s": 1.5}', "heartbeat_s", "86400"),
        ('{"heartbeat_s": "fast"}', "heartbeat_s", "86400"),
        ('{"no_such": 1}', "no_such", "not a threshold"),
    ],
)
def test_the_admin_refuses_out_of_bounds_values_naming_them(
    client, users, cluster, values, name, bound
):
    """The admin edits the raw overrides: a value out of bounds, non-finite or not a number
    is refused, naming the threshold and its bounds, and nothing is stored."""
    client.force_login(users["root"])
    response = client.post(
        "/admin/health/thresholds/add/", {"cluster": cluster.pk, "values": values}
    )
    page = response.content.decode()
    assert response.status_code == 200 and "errorlist" in page, response.status_code
    assert name in page and bound in page
    assert not Thresholds.objects.exists()
    ok = client.post(
        "/admin/health/thresholds/add/", {"cluster": cluster.pk, "values": '{"heartbeat_s": 240}'}
    )
    assert ok.status_code == 302 and Thresholds.objects.get().limits.heartbeat_s == 240


@pytest.mark.parametrize(
    "raw",
    [1e23, 10**400, float("inf"), float("-inf"), float("nan")],
    ids=["1e23", "10**400", "inf", "-inf", "nan"],
)
def test_no_stored_value_breaks_the_limits(raw):
    """A row written by hand (before the bounds, or past them) never raises: huge values are
    taken at the bound, non-finite ones are ignored (the default)."""
    for f in FIELDS:
        value = getattr(limits_from({f.name: raw}), f.name)
        if raw == raw and raw > 0 and raw != float("inf"):
            assert value == HIGHEST[f.name]
        else:
            assert value == DEFAULTS[f.name]


def test_every_check_runs_with_every_threshold_at_its_highest(cluster, fleet):
    """The attack replayed at the edge: the highest allowed values (and 1e23, taken at the
    bound) leave every scheduled check running, gpu_errors included."""
    Thresholds.objects.create(cluster=cluster, values=json.loads(json.dumps(HIGHEST)))
    runs = runs_execute_now(cluster=cluster, kinds=list(SCHEDULED_KINDS), requested_by="test")
    assert {r.kind for r in runs} >= {"gpu_errors", "heartbeat"}
    assert not CheckRun.objects.exclude(status="done").exists(), [
        (r.kind, r.error) for r in CheckRun.objects.exclude(status="done")
    ]
    Thresholds.objects.filter(cluster=cluster).update(values={"heartbeat_s": 1e23})
    runs_execute_now(cluster=cluster, kinds=["gpu_errors"], requested_by="test")
    assert not CheckRun.objects.exclude(status="done").exists()
