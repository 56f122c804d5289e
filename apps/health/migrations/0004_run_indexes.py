"""Indexes for the overview's reads of check runs and for their retention."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("fleet", "0012_cluster_queue"),
        ("health", "0003_result_error"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="checkrun",
            index=models.Index(
                fields=["cluster", "status", "queued_at"], name="run_cluster_status"
            ),
        ),
        migrations.AddIndex(
            model_name="checkrun",
            index=models.Index(fields=["cluster", "started_at"], name="run_cluster_started"),
        ),
        migrations.AddIndex(
            model_name="checkrun",
            index=models.Index(fields=["queued_at"], name="run_queued_at"),
        ),
    ]
