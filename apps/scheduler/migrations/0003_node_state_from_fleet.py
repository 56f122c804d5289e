"""Slurm's view of each node (its state, reason and when it was read) leaves the fleet's node
table for the scheduler's own, SchedulerNode, keyed by the node: every node a sync had seen
gets a row with its values here, before fleet.0017 drops the columns. Reversible: backwards,
fleet.0017 gives the columns back, and the values return to them before the table goes."""

import django.db.models.deletion
from django.db import migrations, models

BATCH = 1000


def to_scheduler(apps, schema_editor):  # noqa: ANN001, ANN201
    Node = apps.get_model("fleet", "Node")
    SchedulerNode = apps.get_model("scheduler", "SchedulerNode")
    seen = (
        Node.objects.exclude(sched_state="", sched_reason="", sched_synced_at=None)
        .order_by("pk")
        .values_list("pk", "sched_state", "sched_reason", "sched_synced_at")
    )
    SchedulerNode.objects.bulk_create(
        (
            SchedulerNode(node_id=pk, state=state, reason=reason, synced_at=at)
            for pk, state, reason, at in seen.iterator(chunk_size=BATCH)
        ),
        batch_size=BATCH,
    )


def to_fleet(apps, schema_editor):  # noqa: ANN001, ANN201
    Node = apps.get_model("fleet", "Node")
    SchedulerNode = apps.get_model("scheduler", "SchedulerNode")
    batch = []
    for pk, state, reason, at in SchedulerNode.objects.order_by("pk").values_list(
        "node_id", "state", "reason", "synced_at"
    ):
        batch.append(Node(pk=pk, sched_state=state, sched_reason=reason, sched_synced_at=at))
        if len(batch) == BATCH:
            Node.objects.bulk_update(batch, ["sched_state", "sched_reason", "sched_synced_at"])
            batch = []
    Node.objects.bulk_update(batch, ["sched_state", "sched_reason", "sched_synced_at"])


class Migration(migrations.Migration):
    dependencies = [
        ("scheduler", "0002_actuation_from_fleet"),
        ("fleet", "0016_actuation_to_scheduler"),
    ]

    operations = [
        migrations.CreateModel(
            name="SchedulerNode",
            fields=[
                (
                    "node",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="sched",
                        serialize=False,
                        to="fleet.node",
                    ),
                ),
                (
                    "state",
                    models.CharField(blank=True, default="", help_text="`idle+drain`", max_length=64),
                ),
                ("reason", models.CharField(blank=True, default="", max_length=300)),
                ("synced_at", models.DateTimeField(blank=True, null=True)),
            ],
        ),
        migrations.RunPython(to_scheduler, to_fleet),
    ]
