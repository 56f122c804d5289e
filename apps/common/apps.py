from django.apps import AppConfig


class CommonConfig(AppConfig):
    name = "apps.common"
    label = "common"

    def ready(self) -> None:
        from django.utils.module_loading import autodiscover_modules

        # Each app's coloured choices register with the generated stylesheet on import.
        autodiscover_modules("choices")
