"""A job's progress — the highest step reached and when — as the API and pages show it."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

pytestmark = pytest.mark.django_db


def _post(api, job, rows):  # noqa: ANN001, ANN202
    now = timezone.now()
    samples = [
        {
            "ts": (now - dt.timedelta(seconds=ago)).isoformat(),
            "step": step,
            "step_time_s": 10.0,
            **({"node": node, "compute_s": 8.0} if node else {"tokens_per_s": 3e5}),
        }
        for ago, step, node in rows
    ]
    response = api("ada").post(
        f"/api/v1/jobs/{job.pk}/metrics/", {"samples": samples}, format="json"
    )
    assert response.status_code == 202


def test_repeating_a_step_is_not_progress_and_per_node_samples_are(api, job, client, users):
    _post(api, job, [(900, 10, None)])
    _post(api, job, [(30, 10, None), (20, 10, "gpu000")])  # the same step again, fresh
    body = api("mia").get(f"/api/v1/jobs/{job.pk}/").json()
    assert body["progress_step"] == 10 and body["last_step"] == 10
    since = timezone.now() - dt.datetime.fromisoformat(body["progress_at"])
    assert 895 < since.total_seconds() < 960  # the first time step 10 was seen
    _post(api, job, [(5, 11, "gpu001")])  # a rank moved on
    body = api("mia").get(f"/api/v1/jobs/{job.pk}/").json()
    assert body["progress_step"] == 11
    client.force_login(users["mia"])
    assert "step 11" in client.get(f"/jobs/{job.pk}/").content.decode()
