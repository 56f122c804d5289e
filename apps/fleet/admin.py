from django.contrib import admin

from apps.fleet.models import GPU, Cluster, Node, NodeStateChange


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    list_display = ("name", "gpu_model", "peak_tflops_per_gpu", "gpus_per_node", "simulated")


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = ("hostname", "cluster", "rack", "state", "last_seen_at")
    list_filter = ("cluster", "state")
    search_fields = ("hostname", "rack")
    readonly_fields = ("state", "state_reason", "state_changed_at")


@admin.register(NodeStateChange)
class NodeStateChangeAdmin(admin.ModelAdmin):
    list_display = ("node", "state", "at", "source", "by")
    list_filter = ("state", "source")
    search_fields = ("node__hostname", "reason")
    raw_id_fields = ("node",)


@admin.register(GPU)
class GPUAdmin(admin.ModelAdmin):
    list_display = ("node", "index", "model", "updated_at")
    search_fields = ("node__hostname", "uuid")
    raw_id_fields = ("node",)
