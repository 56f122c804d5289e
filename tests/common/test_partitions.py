"""Step samples and rollups partitioned by UTC day on PostgreSQL (apps/common/partitions.py,
the jobs.0006 and fleet.0013 migrations): rows reach their day's partition, retention drops
whole days, two workers at once do no harm, Django's schema changes still apply, and the
readers read across days. The embedded default (SQLite) keeps plain tables."""

from __future__ import annotations

import datetime as dt
import io
import threading
from collections.abc import Callable, Iterator

import pytest
from django.core.management import call_command
from django.core.management.color import no_style
from django.db import connection, connections, models
from django.utils import timezone

from apps.common.partition_tables import table_partition, table_unpartition
from apps.common.partitions import (
    default_name,
    partition_key,
    partition_name,
    partitioned_tables,
    partitions_drop_before,
    partitions_ensure,
    partitions_list,
)
from apps.common.tasks import ensure_partitions
from apps.fleet.models import Node
from apps.jobs.models import Job, JobMetric, NodeStepMetric
from apps.jobs.services import job_metrics_prune
from apps.telemetry.models import NodeRollup
from apps.telemetry.selectors import node_rollups
from apps.telemetry.services import rollups_prune
from kuaeweb.schedule import beat_schedule

POSTGRES = connection.vendor == "postgresql"
pytestmark = pytest.mark.django_db
needs_postgres = pytest.mark.skipif(
    not POSTGRES, reason="partitions are PostgreSQL's; SQLite keeps plain tables"
)
TABLES = [
    ("fleet_noderollup", "bucket"),
    ("jobs_jobmetric", "ts"),
    ("jobs_nodestepmetric", "ts"),
]


def today() -> dt.date:
    return timezone.now().astimezone(dt.UTC).date()


def at(day: dt.date, hour: float) -> dt.datetime:
    """`hour` hours into a UTC day."""
    return dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC) + dt.timedelta(hours=hour)


def located(table: str) -> dict[str, int]:
    """Partition → how many of `table`'s rows it holds."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT tableoid::regclass::text, count(*) FROM {table} GROUP BY 1")
        return dict(cursor.fetchall())


def exists(name: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
        return cursor.fetchone()[0]


def post_samples(api: Callable, job: Job, times: list[dt.datetime], node: str | None) -> None:
    """Step samples at `times` through the intake (job-wide, or one node's)."""
    samples = [
        {
            "ts": t.isoformat(),
            "step": 1000 + i,
            "step_time_s": 10.0,
            "tokens_per_s": 1.0e5,
            **({"node": node, "compute_s": 9.0} if node else {}),
        }
        for i, t in enumerate(times)
    ]
    response = api("ada").post(f"/api/v1/jobs/{job.pk}/metrics/", {"samples": samples}, "json")
    assert response.status_code == 202, response.content


@pytest.fixture
def days_ahead_made(db) -> None:  # noqa: ANN001
    """Today's and the next two days' partitions, made now: the test database's migration
    made them for the day it ran, which is yesterday for a run that crosses midnight (UTC)."""
    for table, column in TABLES:
        partitions_ensure(table, column, 2)


@needs_postgres
def test_the_step_and_rollup_tables_are_partitioned_after_migrate() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_partitioned_table p JOIN pg_class c ON c.oid = p.partrelid"
        )
        partitioned = {name for (name,) in cursor.fetchall()}
        assert {"jobs_jobmetric", "jobs_nodestepmetric", "fleet_noderollup"} <= partitioned
        assert "jobs_jobmetrichour" not in partitioned  # small, kept for good: left plain
        assert partitioned_tables() == TABLES
        for table, column in TABLES:
            cursor.execute("SELECT pg_get_serial_sequence(%s, 'id')", [table])
            assert cursor.fetchone()[0] == f"public.{table}_id_seq"
            pk = next(
                c
                for c in connection.introspection.get_constraints(cursor, table).values()
                if c["primary_key"]
            )
            assert pk["columns"] == ["id", column]
            names = [p.name for p in partitions_list(table)]
            # The DEFAULT partition, then today's and the next two days' from the migration.
            assert names[0] == default_name(table)
            assert partition_name(table, today()) in names


@needs_postgres
@pytest.mark.usefixtures("days_ahead_made")
def test_rows_of_three_days_land_in_their_partitions_and_read_as_one(api, job, client, users):
    days = [today() - dt.timedelta(days=k) for k in (40, 39, 38)]
    times = [at(day, h) for day in days for h in (1, 7.5, 23.9)]
    post_samples(api, job, times, None)
    # A row dated beyond the days made ahead (the intake refuses those; other writers may not).
    later = at(today() + dt.timedelta(days=10), 12)
    JobMetric.objects.create(job=job, ts=later, step=2000, step_time_s=10.0, tokens_per_s=1e5)
    post_samples(api, job, times, "gpu001")
    node = Node.objects.get(hostname="gpu001")
    for t in times:
        NodeRollup.objects.create(node=node, bucket=t)
    # The intake made no partition: those days' rows wait in DEFAULT.
    assert located("jobs_jobmetric") == {default_name("jobs_jobmetric"): 10}

    made = {table: partitions_ensure(table, column, 2) for table, column in TABLES}

    for table, _ in TABLES:
        assert made[table] == [partition_name(table, day) for day in days]
        where = located(table)
        assert {where[partition_name(table, day)] for day in days} == {3}
        assert sum(where.values()) == (10 if table == "jobs_jobmetric" else 9)
    assert located("jobs_jobmetric")[default_name("jobs_jobmetric")] == 1  # the later one
    assert [partitions_ensure(t, c, 2) for t, c in TABLES] == [[], [], []]

    # The readers see one table: the API's series, the node's rollups, the job's chart.
    points = api("mia").get(f"/api/v1/jobs/{job.pk}/metrics/?max_points=100").json()["points"]
    assert [p["ts"] for p in points] == [
        t.isoformat().replace("+00:00", "Z") for t in [*times, later]
    ]
    assert [r.bucket for r in node_rollups(node=node, since=at(days[0], 0))] == times
    assert NodeStepMetric.objects.filter(job=job, ts__gte=at(days[1], 0)).count() == 6
    client.force_login(users["mia"])
    assert client.get(f"/charts/jobs/{job.pk}/progress.json").status_code == 200


@needs_postgres
def test_retention_drops_whole_days_and_default_rows(api, job, nodes):
    now = at(today(), 12)
    cutoff = now - dt.timedelta(days=90)
    gone = [cutoff.date() - dt.timedelta(days=k) for k in (3, 2)]
    straddles, kept = cutoff.date(), cutoff.date() + dt.timedelta(days=1)
    times = [at(day, h) for day in (*gone, straddles, kept) for h in (6, 18)]
    post_samples(api, job, times, None)
    post_samples(api, job, times, "gpu000")
    for t in times:
        NodeRollup.objects.create(node=nodes[0], bucket=t + dt.timedelta(days=60))
    for table, column in TABLES:
        partitions_ensure(table, column, 2)
    # One more old row of each, after the partitions were made: it lands in DEFAULT.
    stray = at(cutoff.date() - dt.timedelta(days=200), 0)
    post_samples(api, job, [stray], None)
    post_samples(api, job, [stray], "gpu000")
    NodeRollup.objects.create(node=nodes[0], bucket=stray)

    # Two whole days (2 rows each) and the stray row, per table: job-wide and per node.
    assert job_metrics_prune(older_than_days=90, now=now) == 2 * (4 + 1)
    assert rollups_prune(older_than_days=30, now=now) == 4 + 1

    for table in ("jobs_jobmetric", "jobs_nodestepmetric"):
        assert not any(exists(partition_name(table, day)) for day in gone)
        # The day the cutoff falls in stays whole, its row older than the cutoff included.
        assert located(table) == {
            partition_name(table, straddles): 2,
            partition_name(table, kept): 2,
        }
    assert (
        list(JobMetric.objects.filter(job=job).order_by("ts").values_list("ts", flat=True))
        == (times[4:])
    )
    assert not exists(partition_name("fleet_noderollup", gone[0] + dt.timedelta(days=60)))
    assert NodeRollup.objects.count() == 4
    assert job_metrics_prune(older_than_days=90, now=now) == 0


@needs_postgres
def test_django_schema_changes_still_apply_to_the_partitioned_tables() -> None:
    """What a later migration of these models does: add and drop a column and an index, and
    reset the id sequence (as loaddata and the test flush do)."""
    field = models.IntegerField(null=True, default=7)
    field.set_attributes_from_name("probe")
    index = models.Index(fields=["step"], name="jobmetric_probe_step")
    day = partition_name("jobs_jobmetric", today())
    with connection.schema_editor() as editor:
        editor.add_field(JobMetric, field)
        editor.add_index(JobMetric, index)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM information_schema.columns "
            "WHERE column_name = 'probe' AND table_name IN ('jobs_jobmetric', %s)",
            [day],
        )
        assert cursor.fetchone()[0] == 2
        constraints = connection.introspection.get_constraints(cursor, "jobs_jobmetric")
        assert constraints["jobmetric_probe_step"]["columns"] == ["step"]
    with connection.schema_editor() as editor:
        editor.remove_index(JobMetric, index)
        editor.remove_field(JobMetric, field)
    assert not exists("jobmetric_probe_step")

    with connection.cursor() as cursor:
        cursor.execute("SELECT setval('jobs_jobmetric_id_seq', 500)")
        for sql in connection.ops.sequence_reset_sql(no_style(), [JobMetric]):
            cursor.execute(sql)
        cursor.execute("SELECT last_value, is_called FROM jobs_jobmetric_id_seq")
        assert cursor.fetchone() == (1, False)  # found and reset: the table is empty


@needs_postgres
def test_the_conversion_goes_back_and_forth_keeping_rows_names_and_ids(api, job) -> None:
    # Today at midnight: the intake refuses future samples, and CI may run at 00:30.
    times = [at(today() - dt.timedelta(days=k), 0) for k in (5, 4, 0)]
    post_samples(api, job, times, None)
    table = "jobs_jobmetric"

    def shape() -> tuple[set[str], list[tuple], int]:
        with connection.cursor() as cursor:
            names = set(connection.introspection.get_constraints(cursor, table))
            cursor.execute("SELECT last_value FROM jobs_jobmetric_id_seq")
            (last,) = cursor.fetchone()
        rows = list(JobMetric.objects.order_by("id").values_list("id", "job_id", "ts", "step"))
        return names, rows, last

    before = shape()
    table_unpartition(connection, table)
    assert partition_key(table) is None
    assert shape() == before
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT attidentity FROM pg_attribute WHERE attrelid = %s::regclass AND attname = 'id'",
            [table],
        )
        assert cursor.fetchone()[0] == "d"  # an identity column, as Django makes it

    table_partition(connection, table, "ts")
    assert partition_key(table) == "ts"
    assert shape() == before
    assert set(located(table)) == {partition_name(table, t.date()) for t in times}
    post_samples(api, job, [at(today(), 0.02)], None)  # 72 s past midnight: never > 5 min ahead
    assert JobMetric.objects.order_by("id").last().id == before[2] + 1


@needs_postgres
def test_manage_partitions_lists_and_ensures(api, job) -> None:
    day = today() - dt.timedelta(days=12)
    post_samples(api, job, [at(day, 1), at(day, 2)], None)
    out = io.StringIO()
    call_command("partitions", "--ensure", stdout=out)
    text = out.getvalue()
    assert f"made {partition_name('jobs_jobmetric', day)}" in text
    assert "jobs_jobmetric, by day of ts:" in text
    assert "fleet_noderollup, by day of bucket:" in text
    assert "DEFAULT" in text
    assert f"{day:%Y-%m-%d} 00:00 → " in text


@needs_postgres
@pytest.mark.usefixtures("days_ahead_made")
def test_beat_runs_the_ensure_task_hourly(api, job) -> None:
    day = today() - dt.timedelta(days=20)
    post_samples(api, job, [at(day, 5)], None)
    entry = beat_schedule()["ensure-partitions"]
    assert entry["task"] == ensure_partitions.name == "apps.common.tasks.ensure_partitions"
    assert entry["schedule"].minute == {7} and len(entry["schedule"].hour) == 24
    assert ensure_partitions() == {
        "fleet_noderollup": 0,
        "jobs_jobmetric": 1,
        "jobs_nodestepmetric": 0,
    }


@pytest.fixture
def partitions_restored(transactional_db) -> Iterator[None]:  # noqa: ANN001
    """Partitions made by a test that commits are dropped after it."""
    before = {t: {p.name for p in partitions_list(t)} for t, _ in TABLES}
    yield
    for table, _ in TABLES:
        for part in partitions_list(table):
            if part.name not in before[table]:
                with connection.cursor() as cursor:
                    cursor.execute(f"ALTER TABLE {table} DETACH PARTITION {part.name}")
                    cursor.execute(f"DROP TABLE {part.name}")


def _at_once(calls: list[Callable[[], object]]) -> list[object]:
    """Run each call in its own thread (its own database connection), all released at once;
    their results, or the exception one raised."""
    gate = threading.Barrier(len(calls))
    results: list[object] = [None] * len(calls)

    def run(i: int) -> None:
        try:
            gate.wait()
            results[i] = calls[i]()
        except Exception as error:  # noqa: BLE001 — reported to the test
            results[i] = error
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


@needs_postgres
@pytest.mark.usefixtures("partitions_restored")
def test_two_workers_ensuring_and_pruning_at_once(api, job) -> None:
    table = "jobs_jobmetric"
    for round_ in range(3):
        days = [dt.date(2020, 1 + round_, 1) + dt.timedelta(days=k) for k in range(4)]
        post_samples(api, job, [at(day, h) for day in days for h in (1, 13)], None)
        first, second = _at_once([lambda: partitions_ensure(table, "ts", 2)] * 2)
        assert isinstance(first, list) and isinstance(second, list), (first, second)
        assert not set(first) & set(second)  # each partition made once
        where = located(table)
        assert {where.get(partition_name(table, day)) for day in days} == {2}, where
        assert default_name(table) not in where

    cutoff = at(dt.date(2020, 3, 1), 0)
    one, two = _at_once([lambda: partitions_drop_before(table, cutoff)] * 2)
    assert isinstance(one, int) and isinstance(two, int), (one, two)
    assert one + two == 16  # two rounds' 4 days of 2 rows, each counted once
    assert JobMetric.objects.count() == 8


@pytest.mark.skipif(POSTGRES, reason="the embedded default's own behaviour")
def test_sqlite_has_no_partitions_and_says_so() -> None:
    out = io.StringIO()
    call_command("partitions", stdout=out)
    assert out.getvalue().startswith("No partitioned tables on sqlite")
    assert partitioned_tables() == [] and partitions_ensure("jobs_jobmetric", "ts") == []


@needs_postgres
@pytest.mark.usefixtures("partitions_restored", "days_ahead_made")
def test_the_intake_goes_on_while_partitions_are_made(api, job) -> None:
    """Batches keep arriving for days whose rows sit in DEFAULT (re-posted ones among them)
    while a worker makes those days' partitions and moves the rows: every batch is taken,
    every sample stored once, and no row is left in DEFAULT."""
    table = "jobs_jobmetric"
    days = [dt.date(2020, 5, 1) + dt.timedelta(days=k) for k in range(6)]
    times = [at(day, h + m / 60) for day in days for h in range(0, 24, 4) for m in range(4)]
    agent = api("ada")

    def post() -> list[int]:
        codes = []
        for i in range(0, len(times), 12):
            batch = times[max(0, i - 6) : i + 12]  # half a batch again, then new samples
            samples = [
                {"ts": t.isoformat(), "step": 1, "step_time_s": 10.0, "tokens_per_s": 1e5}
                for t in batch
            ]
            url = f"/api/v1/jobs/{job.pk}/metrics/"
            codes.append(agent.post(url, {"samples": samples}, "json").status_code)
        done.set()
        return codes

    def ensure() -> list[str]:
        made = []
        while not done.is_set():
            made += partitions_ensure(table, "ts", 2)
        return made

    done = threading.Event()
    codes, made = _at_once([post, ensure])
    assert isinstance(codes, list) and set(codes) == {202}, codes
    assert isinstance(made, list) and made, made  # days were made while batches came
    made += partitions_ensure(table, "ts", 2)  # the days of batches that came last
    where = located(table)
    assert sum(where.values()) == len(times) == JobMetric.objects.filter(job=job).count()
    assert set(where) == {partition_name(table, day) for day in days}
    assert sorted(made) == sorted(set(made)) == sorted(where)
