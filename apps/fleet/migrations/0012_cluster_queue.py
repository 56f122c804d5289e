"""Cluster.queue: the Celery queue a cluster's checks and scheduler syncs are sent to."""

import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("fleet", "0011_gpu_fillfactor")]

    operations = [
        migrations.AddField(
            model_name="cluster",
            name="queue",
            field=models.CharField(
                blank=True,
                default="",
                help_text="Celery queue for its checks and Slurm syncs; empty: the shared queue",
                max_length=64,
                validators=[
                    django.core.validators.RegexValidator(
                        "^[A-Za-z0-9][A-Za-z0-9_.:-]*$", "letters, digits, _ . : - only"
                    )
                ],
            ),
        ),
    ]
