"""AgentScope, moved here from accounts (accounts.0004): Django's record of the model is
created on the table accounts.0003 made, then the table is renamed `fleet_agentscope` —
rows, ids and the id counter kept. Reversible: backwards, the table gets its old name and
accounts.0004, undone, gives the model back to accounts."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from apps.common.model_moves import content_types_move


class Migration(migrations.Migration):
    dependencies = [
        ("fleet", "0013_rollup_partitions"),
        ("accounts", "0004_agentscope_to_fleet"),
        ("contenttypes", "0002_remove_content_type_name"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="AgentScope",
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
                            "hostlist",
                            models.CharField(
                                blank=True,
                                default="",
                                help_text="the nodes it writes for, e.g. gpu[001-004]; blank: "
                                "the whole cluster",
                                max_length=2000,
                            ),
                        ),
                        (
                            "hostnames",
                            models.JSONField(blank=True, default=list, editable=False),
                        ),
                        (
                            "cluster",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="fleet.cluster",
                            ),
                        ),
                        (
                            "user",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="agent_scope",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "verbose_name": "agent scope",
                        "db_table": "accounts_agentscope",  # where accounts.0003 made it
                    },
                ),
            ],
            database_operations=[],  # the table exists: accounts.0003's
        ),
        # Now the fleet's own table name (what the model, without db_table, expects).
        migrations.AlterModelTable(name="agentscope", table=None),
        # Its content type (and so its permissions) goes with it.
        content_types_move(("agentscope",), "accounts", "fleet"),
    ]
