"""AgentScope leaves accounts for the fleet (it names clusters and nodes; accounts imports no
app above common). Only Django's record of the model goes here: its table, rows and ids stay
and become fleet.AgentScope in fleet.0014, which renames the table."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0003_agent_scope"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="AgentScope")],
            database_operations=[],  # the table is the fleet's now (fleet.0014)
        ),
    ]
