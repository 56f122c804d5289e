"""The node's Slurm columns go: scheduler.0003 copied their values into scheduler.SchedulerNode
first. Backwards, the columns come back empty and scheduler.0003, undone, fills them again."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("fleet", "0016_actuation_to_scheduler"),
        ("scheduler", "0003_node_state_from_fleet"),
    ]

    operations = [
        migrations.RemoveField(model_name="node", name="sched_reason"),
        migrations.RemoveField(model_name="node", name="sched_state"),
        migrations.RemoveField(model_name="node", name="sched_synced_at"),
    ]
