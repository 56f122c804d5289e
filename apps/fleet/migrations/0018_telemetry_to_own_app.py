"""TelemetryEvent and NodeRollup leave the fleet for the telemetry app (the fleet is the
inventory; everything measured is telemetry's). Only Django's record of the models goes
here: their tables — `fleet_telemetryevent`, and `fleet_noderollup`, partitioned by day on
PostgreSQL (0013) — keep their names, rows, ids and partitions, and become
telemetry.TelemetryEvent and telemetry.NodeRollup in telemetry.0001. Reversible: backwards,
telemetry.0001 gives them back to the fleet, nothing in the database moving either way."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("fleet", "0017_node_sched_to_scheduler"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="NodeRollup"),
                migrations.DeleteModel(name="TelemetryEvent"),
            ],
            database_operations=[],  # the tables are telemetry's now (telemetry.0001)
        ),
    ]
