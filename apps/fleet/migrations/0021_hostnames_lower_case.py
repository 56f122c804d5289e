"""Hostnames compare without regard to case (apps.common.hostnames): every name that comes in
is put in lower case, so a node stored before with upper case letters (`R007N01`) would no
longer be found by its intakes, which would register `r007n01` beside it. Each such node is
renamed to its lower-case name, unless a node of that name already exists (two nodes that
differ only in case: left as they are for an operator to merge; docs/operations.md)."""

from django.db import migrations


def lower_case(apps, schema_editor):  # noqa: ANN001, ANN201
    Node = apps.get_model("fleet", "Node")
    taken = set(Node.objects.values_list("hostname", flat=True))
    for pk, hostname in Node.objects.values_list("pk", "hostname").iterator():
        lower = hostname.translate(
            str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
        )
        if lower != hostname and lower not in taken:
            Node.objects.filter(pk=pk).update(hostname=lower)
            taken.add(lower)


class Migration(migrations.Migration):
    dependencies = [("fleet", "0020_gpu_source")]

    operations = [migrations.RunPython(lower_case, migrations.RunPython.noop)]
