from django.db import migrations, models
from django.db.models import F


def backfill(apps, schema_editor):
    """Existing jobs: their newest job-wide sample is the best progress known."""
    Job = apps.get_model("jobs", "Job")
    Job.objects.filter(last_metric_at__isnull=False).update(
        progress_step=F("last_step"), progress_at=F("last_metric_at")
    )


class Migration(migrations.Migration):
    dependencies = [("jobs", "0003_metric_hours")]

    operations = [
        migrations.AddField(
            model_name="job",
            name="progress_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="job",
            name="progress_step",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
