"""Step samples partitioned by UTC day on PostgreSQL (job-wide and per node): retention drops
a day's partition instead of deleting its rows. The tables are converted in place with their
rows, names and id counters (apps/common/partition_tables.py); SQLite keeps plain tables."""

from django.db import migrations

from apps.common.partition_tables import table_partition, table_unpartition

TABLES = (("jobs_jobmetric", "ts"), ("jobs_nodestepmetric", "ts"))


def forward(apps, schema_editor):  # noqa: ANN001, ANN201
    for table, column in TABLES:
        table_partition(schema_editor.connection, table, column)


def backward(apps, schema_editor):  # noqa: ANN001, ANN201
    for table, _ in TABLES:
        table_unpartition(schema_editor.connection, table)


class Migration(migrations.Migration):
    dependencies = [("jobs", "0005_job_attempts_submitted_at")]

    operations = [migrations.RunPython(forward, backward)]
