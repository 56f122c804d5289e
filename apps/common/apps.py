from django.apps import AppConfig


class CommonConfig(AppConfig):
    name = "apps.common"
    label = "common"

    def ready(self) -> None:
        from django.utils.module_loading import autodiscover_modules

        # The start-up check that every registry was filled, and the panels' registry.
        from apps.common import lending, panels  # noqa: F401

        # Each app's coloured choices register with the generated stylesheet on import.
        autodiscover_modules("choices")
