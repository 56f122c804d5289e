"""Actuation leaves the fleet for the scheduler (Slurm, all of it, in one app; the fleet knows
no scheduler). Only Django's record of the model goes here: its table, rows and ids stay and
become scheduler.Actuation in scheduler.0002, which renames the table."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("fleet", "0015_plugin_kinds"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="Actuation")],
            database_operations=[],  # the table is the scheduler's now (scheduler.0002)
        ),
    ]
