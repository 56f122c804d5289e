from django.db import migrations, models

OLD = {
    "heartbeat_s": 180,
    "heartbeat_cluster_share": 0.10,
    "hang_min_s": 600,
    "hang_step_factor": 10.0,
    "hang_window": 50,
    "hang_no_metrics_s": 1800,
    "slow_factor": 1.10,
    "slow_samples": 20,
    "slow_min_samples": 5,
    "slow_min_nodes": 4,
    "gemm_factor": 0.90,
    "sdc_round_s": 600,
    "temp_c": 90,
    "mem_temp_c": 95,
    "drain_cap_share": 0.02,
}


def to_values(apps, schema_editor):
    """Each cluster's columns become overrides: the values that differ from the defaults."""
    Thresholds = apps.get_model("health", "Thresholds")
    for row in Thresholds.objects.all():
        row.values = {k: getattr(row, k) for k, v in OLD.items() if getattr(row, k) != v}
        row.save(update_fields=["values"])


def to_columns(apps, schema_editor):
    Thresholds = apps.get_model("health", "Thresholds")
    for row in Thresholds.objects.all():
        for k, v in row.values.items():
            if k in OLD:
                setattr(row, k, v)
        row.save()


class Migration(migrations.Migration):
    dependencies = [("health", "0001_initial")]

    operations = [
        migrations.AddField(
            model_name="thresholds",
            name="values",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.RunPython(to_values, to_columns),
        *[migrations.RemoveField(model_name="thresholds", name=name) for name in OLD],
    ]
