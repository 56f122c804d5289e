from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "apps.accounts"
    label = "accounts"

    def ready(self) -> None:
        from apps.accounts import (  # noqa: F401 - signal receivers, OpenAPI extension
            audit,
            schema,
            scoping,  # its registry, filled by the fleet, checked at start-up
            sessions,
            token_cache,
        )
        from apps.accounts.models import ApiToken, User

        # A remembered token is forgotten when what makes it live changes in this process.
        token_cache.forget_on(ApiToken, User)
