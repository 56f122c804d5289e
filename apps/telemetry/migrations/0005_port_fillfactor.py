"""telemetry_port pages half full on PostgreSQL, as fleet_gpu's (fleet 0011): the intake's
per-sweep UPDATE of every port's latest reading and the fabric check's of what it judged
are then HOT updates (the new row version on the same page, no index entries). Pages
written before this keep their layout until updated rows move (or `VACUUM FULL
telemetry_port`)."""

from django.db import migrations


def _fillfactor(value: str):  # noqa: ANN202
    def apply(apps, schema_editor) -> None:  # noqa: ANN001
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(f"ALTER TABLE telemetry_port {value}")

    return apply


class Migration(migrations.Migration):
    dependencies = [("telemetry", "0004_port_rollups")]

    operations = [
        migrations.RunPython(
            _fillfactor("SET (fillfactor = 50)"), _fillfactor("RESET (fillfactor)")
        ),
    ]
