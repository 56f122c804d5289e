"""TelemetryEvent and NodeRollup, moved here from the fleet (fleet.0018): Django's record of
each model is created on the table the fleet made, under the name it has — the tables are
not renamed. `fleet_noderollup` is partitioned by day on PostgreSQL (fleet.0013) and its
partitions are named after it (`fleet_noderollup_pYYYYMMDD`, apps/common/partitions.py), so
keeping the name keeps them, and the rows, ids and id counters stay where they are.

Their content types (and with them the permissions and admin log entries naming them) move
with them, so those rows and ids are kept too. Reversible: backwards, the content types go
back to the fleet and fleet.0018, undone, gives the models back to it."""

import django.db.models.deletion
import django.db.models.functions.datetime
from django.db import migrations, models

from apps.common.model_moves import content_types_move

MODELS = ("telemetryevent", "noderollup")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("fleet", "0018_telemetry_to_own_app"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="NodeRollup",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("gpu_util_min", models.FloatField(null=True)),
                        ("gpu_util_max", models.FloatField(null=True)),
                        ("gpu_util_sum", models.FloatField(default=0)),
                        ("gpu_util_n", models.IntegerField(default=0)),
                        ("tensor_active_min", models.FloatField(null=True)),
                        ("tensor_active_max", models.FloatField(null=True)),
                        ("tensor_active_sum", models.FloatField(default=0)),
                        ("tensor_active_n", models.IntegerField(default=0)),
                        ("temp_c_min", models.FloatField(null=True)),
                        ("temp_c_max", models.FloatField(null=True)),
                        ("temp_c_sum", models.FloatField(default=0)),
                        ("temp_c_n", models.IntegerField(default=0)),
                        ("mem_temp_c_min", models.FloatField(null=True)),
                        ("mem_temp_c_max", models.FloatField(null=True)),
                        ("mem_temp_c_sum", models.FloatField(default=0)),
                        ("mem_temp_c_n", models.IntegerField(default=0)),
                        ("power_w_min", models.FloatField(null=True)),
                        ("power_w_max", models.FloatField(null=True)),
                        ("power_w_sum", models.FloatField(default=0)),
                        ("power_w_n", models.IntegerField(default=0)),
                        ("sm_clock_mhz_min", models.FloatField(null=True)),
                        ("sm_clock_mhz_max", models.FloatField(null=True)),
                        ("sm_clock_mhz_sum", models.FloatField(default=0)),
                        ("sm_clock_mhz_n", models.IntegerField(default=0)),
                        ("mem_used_mib_min", models.FloatField(null=True)),
                        ("mem_used_mib_max", models.FloatField(null=True)),
                        ("mem_used_mib_sum", models.FloatField(default=0)),
                        ("mem_used_mib_n", models.IntegerField(default=0)),
                        (
                            "bucket",
                            models.DateTimeField(help_text="start of the 5-minute bucket"),
                        ),
                        (
                            "node",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="rollups",
                                to="fleet.node",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "fleet_noderollup",  # where the fleet made it
                        "indexes": [models.Index(fields=["bucket"], name="rollup_bucket")],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("node", "bucket"), name="rollup_node_bucket"
                            )
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="TelemetryEvent",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("gpu", models.PositiveSmallIntegerField(blank=True, null=True)),
                        ("at", models.DateTimeField()),
                        ("kind", models.CharField(max_length=32)),
                        (
                            "subject",
                            models.CharField(blank=True, db_default="", default="", max_length=64),
                        ),
                        ("value", models.FloatField()),
                        ("previous", models.FloatField(blank=True, null=True)),
                        (
                            "code",
                            models.PositiveIntegerField(blank=True, help_text="XID code", null=True),
                        ),
                        (
                            "pci_bus",
                            models.CharField(blank=True, db_default="", default="", max_length=16),
                        ),
                        (
                            "message",
                            models.CharField(
                                blank=True, db_default="", default="", max_length=500
                            ),
                        ),
                        (
                            "source",
                            models.CharField(
                                choices=[("exporter", "Exporter"), ("kernel", "Kernel log")],
                                db_default="exporter",
                                default="exporter",
                                max_length=8,
                            ),
                        ),
                        (
                            "recorded_at",
                            models.DateTimeField(
                                db_default=django.db.models.functions.datetime.Now(),
                                help_text="server time it arrived",
                            ),
                        ),
                        (
                            "node",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="events",
                                to="fleet.node",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "fleet_telemetryevent",  # where the fleet made it
                        "ordering": ["-at", "-id"],
                        "indexes": [
                            models.Index(fields=["node", "at"], name="event_node_at"),
                            models.Index(fields=["at"], name="event_at"),
                            models.Index(fields=["recorded_at"], name="event_recorded_at"),
                            models.Index(
                                condition=models.Q(("gpu__isnull", True)),
                                fields=["node"],
                                name="event_unplaced",
                            ),
                        ],
                        "constraints": [
                            models.UniqueConstraint(
                                condition=models.Q(("source", "exporter")),
                                fields=("node", "gpu", "at", "kind"),
                                name="event_once",
                            ),
                            models.UniqueConstraint(
                                condition=models.Q(
                                    ("source", "kernel"), models.Q(("pci_bus", ""), _negated=True)
                                ),
                                fields=("node", "kind", "pci_bus", "code", "at"),
                                name="kernel_event_bus_once",
                            ),
                            models.UniqueConstraint(
                                condition=models.Q(("pci_bus", ""), ("source", "kernel")),
                                fields=("node", "kind", "gpu", "code", "at"),
                                name="kernel_event_gpu_once",
                            ),
                            models.UniqueConstraint(
                                condition=models.Q(("subject", ""), _negated=True),
                                fields=("node", "kind", "subject", "at"),
                                name="subject_event_once",
                            ),
                        ],
                    },
                ),
            ],
            database_operations=[],  # the tables exist: the fleet's, under their names
        ),
        content_types_move(MODELS, "fleet", "telemetry"),
    ]
