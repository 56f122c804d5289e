"""Check kinds (docs/checks.md), result and run statuses, with colours."""

from __future__ import annotations

from django.db import models

from apps.common.choices import ColouredChoices, Hue, css_prefix


class CheckKind(models.TextChoices):
    """The health checks of docs/checks.md."""

    HEARTBEAT = "heartbeat", "Heartbeat"
    JOB_HANG = "job_hang", "Job hang"
    SLOW_NODE = "slow_node", "Slow node"
    SDC = "sdc", "Silent data corruption"
    GPU_ERRORS = "gpu_errors", "GPU errors (ECC/XID)"
    THERMAL = "thermal", "Thermal"
    PREFLIGHT = "preflight", "Pre-flight"


SCHEDULED_KINDS = tuple(k for k in CheckKind if k != CheckKind.PREFLIGHT)

# The result target that says whether a cluster's Prometheus (docs/integrations.md, 2d. Prometheus)
# answered the last run of a check that reads it.
SOURCE_TARGET = "source:prometheus"


@css_prefix("res")
class ResultStatus(ColouredChoices):
    """A check's verdict on one target."""

    PASS = "pass", "Pass"
    WARN = "warn", "Warn"
    FAIL = "fail", "Fail"
    # Not checked: the data the check reads did not come (its telemetry source did not
    # answer: docs/checks.md, How a check run works) — never a pass, and nothing changes on it.
    ERROR = "error", "Error"

    @classmethod
    def palette(cls) -> dict[str, str]:
        return {"pass": Hue.GREEN, "warn": Hue.AMBER, "fail": Hue.RED, "error": Hue.PURPLE}


SEVERITY_ORDER = {"pass": 0, "error": 1, "warn": 2, "fail": 3}


@css_prefix("run")
class RunStatus(ColouredChoices):
    """Where a check run is."""

    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    ERROR = "error", "Error"

    @classmethod
    def palette(cls) -> dict[str, str]:
        return {"queued": Hue.GREY, "running": Hue.BLUE, "done": Hue.GREEN, "error": Hue.RED}
