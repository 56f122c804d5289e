"""Actuation, moved here from the fleet (fleet.0016): Django's record of the model is created
on the table fleet.0007 made, then the table is renamed `scheduler_actuation` — rows, ids, the
id counter, its indexes and its keys to nodes and state changes kept. Reversible: backwards,
the table gets its old name and fleet.0016, undone, gives the model back to the fleet."""

import django.db.models.deletion
from django.db import migrations, models

from apps.common.model_moves import content_types_move


class Migration(migrations.Migration):
    dependencies = [
        ("scheduler", "0001_initial"),
        ("fleet", "0016_actuation_to_scheduler"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Actuation",
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
                        (
                            "action",
                            models.CharField(
                                choices=[("drain", "Drain"), ("resume", "Resume")], max_length=8
                            ),
                        ),
                        ("reason", models.CharField(max_length=200)),
                        ("requested_at", models.DateTimeField()),
                        ("sent_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "result",
                            models.CharField(
                                choices=[
                                    ("pending", "Pending"),
                                    ("done", "Done"),
                                    ("failed", "Failed"),
                                    ("skipped", "Skipped"),
                                ],
                                default="pending",
                                max_length=8,
                            ),
                        ),
                        ("error", models.CharField(blank=True, default="", max_length=500)),
                        ("attempts", models.PositiveIntegerField(default=0)),
                        ("next_try_at", models.DateTimeField()),
                        (
                            "node",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="actuations",
                                to="fleet.node",
                            ),
                        ),
                        (
                            "state_change",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="fleet.nodestatechange",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["-requested_at", "-id"],
                        "indexes": [
                            models.Index(
                                condition=models.Q(("result", "pending")),
                                fields=["next_try_at", "id"],
                                name="actuation_pending",
                            ),
                            models.Index(fields=["node", "requested_at"], name="actuation_node"),
                        ],
                        "db_table": "fleet_actuation",  # where fleet.0007 made it
                    },
                ),
            ],
            database_operations=[],  # the table exists: fleet.0007's
        ),
        # Now the scheduler's own table name (what the model, without db_table, expects).
        migrations.AlterModelTable(name="actuation", table=None),
        # Its content type (and so its permissions) goes with it.
        content_types_move(("actuation",), "fleet", "scheduler"),
    ]
