"""Incident categories (docs/incidents.md), severities and statuses, with colours."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from apps.common.choices import ColouredChoices, Hue, css_prefix


class Category(models.TextChoices):
    """Root-cause category slugs (docs/incidents.md, Categories)."""

    GPU = "gpu", _("Faulty GPU")
    GPU_HBM = "gpu_hbm", _("GPU HBM memory")
    GPU_SRAM = "gpu_sram", _("GPU SRAM memory")
    GPU_SYSTEM_PROCESSOR = "gpu_system_processor", _("GPU system processor")
    GPU_THERMAL = "gpu_thermal", _("GPU thermal")
    DRIVER = "driver", _("Driver")
    NETWORK_SWITCH_CABLE = "network_switch_cable", _("Network switch/cable")
    NIC = "nic", _("NIC")
    NCCL_TIMEOUT = "nccl_timeout", _("NCCL timeout")
    HANG = "hang", _("Hang")
    SILENT_DATA_CORRUPTION = "silent_data_corruption", _("Silent data corruption")
    SLOW_NODE = "slow_node", _("Slow node")
    SOFTWARE_BUG = "software_bug", _("Software bug")
    HOST_MAINTENANCE = "host_maintenance", _("Host maintenance")
    STORAGE = "storage", _("Storage")
    POWER_SUPPLY = "power_supply", _("Power supply")
    CPU = "cpu", _("CPU")
    HOST_MEMORY = "host_memory", _("Host memory")
    CHASSIS = "chassis", _("Chassis")
    IO_EXPANSION_BOARD = "io_expansion_board", _("IO expansion board")
    DEPENDENCY = "dependency", _("Dependency")
    NODE_UNREACHABLE = "node_unreachable", _("Node unreachable")
    OTHER = "other", _("Other")


def category_label(slug: str) -> str:
    """What a person reads for a category slug: its label ('network_switch_cable' →
    'Network switch/cable'); a slug no longer in the list as words ('old_cause' → 'Old cause')."""
    try:
        return str(Category(slug).label)
    except ValueError:
        return slug.replace("_", " ").capitalize()


@css_prefix("sev")
class Severity(ColouredChoices):
    """sev1 (training stopped) … sev4 (informational)."""

    SEV1 = "sev1", "SEV1"
    SEV2 = "sev2", "SEV2"
    SEV3 = "sev3", "SEV3"
    SEV4 = "sev4", "SEV4"

    @classmethod
    def palette(cls) -> dict[str, str]:
        return {"sev1": Hue.RED, "sev2": Hue.ORANGE, "sev3": Hue.AMBER, "sev4": Hue.GREY}


@css_prefix("inc")
class IncidentStatus(ColouredChoices):
    """open → investigating → mitigated → resolved → closed."""

    OPEN = "open", _("Open")
    INVESTIGATING = "investigating", _("Investigating")
    MITIGATED = "mitigated", _("Mitigated")
    RESOLVED = "resolved", _("Resolved")
    CLOSED = "closed", _("Closed")

    @classmethod
    def palette(cls) -> dict[str, str]:
        return {
            "open": Hue.RED,
            "investigating": Hue.ORANGE,
            "mitigated": Hue.AMBER,
            "resolved": Hue.GREEN,
            "closed": Hue.GREY,
        }


@css_prefix("pm")
class PostmortemStatus(ColouredChoices):
    """draft → in_review → approved (by another engineer than the author)."""

    DRAFT = "draft", _("Draft")
    IN_REVIEW = "in_review", _("In review")
    APPROVED = "approved", _("Approved")

    @classmethod
    def palette(cls) -> dict[str, str]:
        return {"draft": Hue.GREY, "in_review": Hue.AMBER, "approved": Hue.GREEN}


@css_prefix("alert")
class AlertStatus(ColouredChoices):
    """An Alertmanager alert's status: firing, or resolved."""

    FIRING = "firing", _("Firing")
    RESOLVED = "resolved", _("Resolved")

    @classmethod
    def palette(cls) -> dict[str, str]:
        return {"firing": Hue.RED, "resolved": Hue.GREEN}


# The most characters an incident's title holds (Incident.title; a check cuts its titles
# to it).
TITLE_LENGTH = 300

ACTIVE_STATUSES = frozenset(
    {IncidentStatus.OPEN, IncidentStatus.INVESTIGATING, IncidentStatus.MITIGATED}
)


class Source(models.TextChoices):
    """Where an incident came from."""

    MANUAL = "manual", _("Manual")
    HEALTH = "health", _("Health check")
    ALERTMANAGER = "alertmanager", _("Alertmanager")
    SLURM = "slurm", _("Slurm")
    SIMULATOR = "simulator", _("Simulator")
