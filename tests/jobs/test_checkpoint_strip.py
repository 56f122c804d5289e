"""The job chart's checkpoints: ticks on a strip axis of their own (never points at 0 on the
MFU axis), each saying its step, time and pause; a run with hundreds of them keeps a
readable number of marks, each counting the checkpoints it stands for."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.jobs.charts import MAX_CHECKPOINT_MARKS
from apps.jobs.models import Job
from apps.jobs.services import checkpoints_record_bulk

pytestmark = pytest.mark.django_db


def _chart(client, users, job: Job) -> dict:  # noqa: ANN001
    client.force_login(users["otto"])
    response = client.get(f"/charts/jobs/{job.pk}/progress.json")
    assert response.status_code == 200
    return response.json()


def test_each_checkpoint_is_a_tick_on_its_own_strip(client, users, job: Job) -> None:
    start = job.started_at
    saves = [
        (1000 * (k + 1), start + dt.timedelta(hours=6 * (k + 1)), 10.0 + k, None) for k in range(5)
    ]
    checkpoints_record_bulk(job=job, items=saves)
    fig = _chart(client, users, job)
    [strip] = [t for t in fig["data"] if t["name"] == "checkpoint"]
    assert strip["yaxis"] == "y4" and strip["marker"]["symbol"] == "line-ns"
    assert not any(t.get("yaxis") == "y" and t["name"] == "checkpoint" for t in fig["data"])
    axis = fig["layout"]["yaxis4"]
    assert axis["ticktext"] == ["checkpoints"] and axis["range"] == [0, 1]
    # the strip sits under every data panel and carries the time axis
    assert axis["domain"][1] <= min(fig["layout"][f"yaxis{n}"]["domain"][0] for n in ("", "2", "3"))
    assert fig["layout"]["xaxis"]["anchor"] == "y4"
    assert strip["x"] == [s.strftime("%Y-%m-%dT%H:%M:%SZ") for _, s, _, _ in saves]
    assert strip["hovertext"][2] == (
        f"checkpoint at step 3,000<br>{saves[2][1]:%Y-%m-%d %H:%M} UTC<br>training paused 12.0 s"
    )


def test_hundreds_of_checkpoints_become_a_few_hundred_marks(client, users, job: Job) -> None:
    Job.objects.filter(pk=job.pk).update(started_at=timezone.now() - dt.timedelta(days=30))
    job.refresh_from_db()
    n = 30 * 24 * 4  # every 15 minutes for 30 days
    checkpoints_record_bulk(
        job=job,
        items=[
            (100 * k, job.started_at + dt.timedelta(minutes=15 * k, seconds=30), 5.0 + k % 7, None)
            for k in range(n)
        ],
    )
    fig = _chart(client, users, job)
    [strip] = [t for t in fig["data"] if t["name"] == "checkpoint"]
    assert 200 <= len(strip["x"]) <= MAX_CHECKPOINT_MARKS + 1
    assert strip["x"] == sorted(strip["x"])
    counts = [int(text.split(" ", 1)[0]) for text in strip["hovertext"]]
    assert sum(counts) == n  # every checkpoint is in exactly one mark
    assert "steps 0–" in strip["hovertext"][0] and "training paused 5.0–" in strip["hovertext"][0]


def test_no_checkpoint_no_strip(client, users, job: Job) -> None:
    fig = _chart(client, users, job)
    assert not [t for t in fig["data"] if t["name"] == "checkpoint"]
    assert "yaxis4" not in fig["layout"] and fig["layout"]["xaxis"]["anchor"] == "y3"
