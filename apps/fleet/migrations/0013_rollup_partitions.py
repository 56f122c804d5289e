"""5-minute rollups partitioned by UTC day (of their bucket) on PostgreSQL: retention drops a
day's partition instead of deleting its rows. The table is converted in place with its rows,
names and id counter (apps/common/partition_tables.py); SQLite keeps a plain table."""

from django.db import migrations

from apps.common.partition_tables import table_partition, table_unpartition


def forward(apps, schema_editor):  # noqa: ANN001, ANN201
    table_partition(schema_editor.connection, "fleet_noderollup", "bucket")


def backward(apps, schema_editor):  # noqa: ANN001, ANN201
    table_unpartition(schema_editor.connection, "fleet_noderollup")


class Migration(migrations.Migration):
    dependencies = [("fleet", "0012_cluster_queue")]

    operations = [migrations.RunPython(forward, backward)]
