from django.apps import AppConfig


class FleetConfig(AppConfig):
    name = "apps.fleet"
    label = "fleet"

    def ready(self) -> None:
        from apps.accounts import scoping, token_cache
        from apps.fleet import readers, transitions  # noqa: F401 - registries, checked at start-up
        from apps.fleet.models import AgentScope, Cluster
        from apps.fleet.scope import USER_RELATED, is_scoped

        # RolePermission refuses a scoped agent where no scope is checked; tokens read it.
        scoping.lend(is_scoped=is_scoped, user_related=USER_RELATED)
        # A token remembered with its scope (token_cache) is forgotten when the scope changes.
        token_cache.forget_on(AgentScope, Cluster)
