"""One name per GPU model (docs/pages.md, One name per model): a GPU stored as "H100" (its
cluster's default) and one stored as "NVIDIA H100 80GB HBM3" (dcgm-exporter's) are one model.
Every stored name — each GPU's model and each cluster's `gpu_model` — is put under the model's
one name (apps.fleet.gpu_models); a name the table does not know is kept, trimmed. One UPDATE
per distinct name, not per GPU."""

from django.db import migrations

from apps.fleet.vendors import model_name


def one_name(apps, schema_editor):  # noqa: ANN001, ANN201
    Cluster = apps.get_model("fleet", "Cluster")
    GPU = apps.get_model("fleet", "GPU")
    for pk, gpu_model in Cluster.objects.values_list("pk", "gpu_model"):
        name = model_name("", gpu_model)
        if name != gpu_model:
            Cluster.objects.filter(pk=pk).update(gpu_model=name)
    pairs = GPU.objects.order_by().values_list("vendor", "model").distinct()
    for vendor, model in list(pairs):
        name = model_name(vendor, model)
        if name != model:
            GPU.objects.filter(vendor=vendor, model=model).update(model=name)


class Migration(migrations.Migration):
    dependencies = [("fleet", "0021_hostnames_lower_case")]

    operations = [migrations.RunPython(one_name, migrations.RunPython.noop)]
