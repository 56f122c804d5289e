"""What a run keeps of a result's past, now that only changed results' times are read (at
100,000 GPUs reading every result's timestamps took most of a run): a verdict that stays
keeps its `since`, a new one starts it, and `last_fail_at` stays when a failure clears.
And the GPU values the checks read out of the JSON are the values posted, times exact."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.utils import timezone

from apps.fleet.models import GPU, Node
from apps.health.checks import PLUGINS
from apps.health.checks.base import always_monitored
from apps.health.inputs import gpus_latest
from apps.health.models import CheckResult, CheckRun
from apps.health.services import run_execute

pytestmark = pytest.mark.django_db


def _run(cluster, kind: str, now: dt.datetime) -> None:  # noqa: ANN001
    run = CheckRun.objects.create(cluster=cluster, kind=kind, requested_by="test")
    assert run_execute(run_id=run.pk, now=now).status == "done"


def _result(kind: str, target: str) -> tuple[str, dt.datetime, dt.datetime | None]:
    r = CheckResult.objects.get(kind=kind, target=target)
    return r.status, r.since, r.last_fail_at


def test_a_warning_keeps_its_since_and_a_cleared_one_starts_again(cluster, fleet):
    t = [timezone.now().replace(microsecond=123457) + dt.timedelta(minutes=m) for m in range(5)]
    gpu = GPU.objects.get(node__hostname="h03", index=2)
    expected = [
        ("pass", t[0], None),  # hot once: passes until it stays hot
        ("warn", t[1], None),  # hot twice: warns from now
        ("warn", t[1], None),  # still hot: its message rewritten, its since kept
        ("pass", t[3], None),  # cool again
        ("pass", t[3], None),  # unchanged: not rewritten
    ]
    for i, now in enumerate(t):
        temp = 91 + i if i < 3 else 60
        GPU.objects.filter(pk=gpu.pk).update(metrics={"temp_c": temp}, updated_at=now)
        _run(cluster, "thermal", now)
        assert _result("thermal", "gpu:h03/2") == expected[i], i
        if i == 2:
            assert "93 °C" in CheckResult.objects.get(target="gpu:h03/2").message


def test_a_failure_that_clears_keeps_when_it_last_failed(cluster, fleet):
    t0 = timezone.now().replace(microsecond=1)
    silent = t0 - dt.timedelta(minutes=10)
    Node.objects.filter(hostname="h07").update(last_seen_at=silent, last_heartbeat_at=silent)
    Node.objects.exclude(hostname="h07").update(last_seen_at=t0, last_heartbeat_at=t0)
    _run(cluster, "heartbeat", t0)
    assert _result("heartbeat", "node:h07") == ("fail", t0, t0)
    back = t0 + dt.timedelta(minutes=2)
    Node.objects.update(last_seen_at=back, last_heartbeat_at=back)
    _run(cluster, "heartbeat", back)
    assert _result("heartbeat", "node:h07") == ("pass", back, t0)


def test_gpu_values_are_read_as_posted(cluster, fleet):
    at = timezone.now().replace(microsecond=999999)
    GPU.objects.filter(node__hostname="h01", index=0).update(
        metrics={"temp_c": 71, "gemm_checksum": 1834.2265625, "ecc_dbe_total": 2**62},
        updated_at=at,
        probe_at=at - dt.timedelta(microseconds=1),
    )
    (gpu,) = [
        g
        for g in gpus_latest(cluster, ("temp_c", "gemm_checksum", "ecc_dbe_total", "absent"))
        if (g.node, g.index) == ("h01", 0)
    ]
    assert gpu.metrics == {"temp_c": 71, "gemm_checksum": 1834.2265625, "ecc_dbe_total": 2**62}
    assert type(gpu.metrics["temp_c"]) is int
    assert (gpu.updated_at, gpu.probe_at) == (at, at - dt.timedelta(microseconds=1))


def test_a_pass_is_dated_when_it_began_and_its_kinds_last_run_says_when_it_was_judged(
    cluster, fleet, api, client, users, django_assert_max_num_queries
):
    """docs/checks.md, How a check run works: a pass is written when it changes, so its
    `at` is when it began; beside it, the API and the Health page give its kind's last
    completed run."""
    t0 = timezone.now().replace(microsecond=0) - dt.timedelta(minutes=10)
    t1 = t0 + dt.timedelta(minutes=5)
    for now in (t0, t1):
        Node.objects.update(last_seen_at=now, last_heartbeat_at=now)
        _run(cluster, "heartbeat", now)
    # a later run that broke judged nothing: the verdicts still hold as of t1
    CheckRun.objects.create(
        cluster=cluster, kind="heartbeat", status="error", started_at=t1 + dt.timedelta(minutes=1)
    )
    body = api("mia").get("/api/v1/health/results/?cluster=c1&kind=heartbeat&node=h03").json()
    (result,) = body["results"]
    assert result["status"] == "pass"
    assert dt.datetime.fromisoformat(result["at"]) == t0  # when the pass began
    assert dt.datetime.fromisoformat(result["since"]) == t0
    assert dt.datetime.fromisoformat(result["judged_at"]) == t1  # when it was last judged
    never = api("mia").get("/api/v1/health/results/?cluster=c1&kind=thermal").json()
    assert never["count"] == 0  # (no thermal run: nothing to date)

    client.force_login(users["mia"])
    # as tests/health/test_pages.py: one query for each check that can be "not monitored"
    budget = 20 + sum(spec.not_monitored is not always_monitored for spec in PLUGINS)
    with django_assert_max_num_queries(budget):
        html = client.get("/health/?cluster=c1&status=pass&node=h03").content.decode()
    table = html[html.index('id="res-h"') :]
    table = table[: table.index("</table>")]
    assert '<th scope="col">Last judged</th>' in table and "Checked" not in table
    row = table[table.index("node:h03") :]
    row = row[: row.index("</tr>")]
    since, judged = re.findall(r'<time datetime="([^"]+)"', row)
    assert dt.datetime.fromisoformat(since) == t0 and dt.datetime.fromisoformat(judged) == t1
