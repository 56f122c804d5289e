"""A port's `state` (and the judged one) holds a state's name as reported, up to 32
characters: `ACTIVE_DEFER` and states the kernel adds are kept, not refused."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('telemetry', '0005_port_fillfactor'),
    ]

    operations = [
        migrations.AlterField(
            model_name='port',
            name='judged_state',
            field=models.CharField(blank=True, db_default='', default='', max_length=32),
        ),
        migrations.AlterField(
            model_name='port',
            name='state',
            field=models.CharField(blank=True, default='', max_length=32),
        ),
    ]
