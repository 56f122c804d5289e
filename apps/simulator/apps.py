from django.apps import AppConfig


class SimulatorConfig(AppConfig):
    name = "apps.simulator"
    label = "simulator"
