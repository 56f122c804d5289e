from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "apps.jobs"
    label = "jobs"

    def ready(self) -> None:
        from apps.fleet import readers
        from apps.jobs import readers as job_readers  # noqa: F401 - registry, checked at start-up
        from apps.jobs.selectors import running_node_ids

        readers.lend(busy_nodes=running_node_ids)  # the fleet counts allocated GPUs with it
