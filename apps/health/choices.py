"""Result and run statuses, with colours. (A check's kind is its plug-in's:
`apps.health.checks`.)"""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from apps.common.choices import ColouredChoices, Hue, css_prefix

# The result target that says whether a cluster's Prometheus answered the last run of a
# check that reads it (docs/integrations.md, 2d. Prometheus as the telemetry source).
SOURCE_TARGET = "source:prometheus"


@css_prefix("res")
class ResultStatus(ColouredChoices):
    """A check's verdict on one target."""

    PASS = "pass", _("Pass")
    WARN = "warn", _("Warn")
    FAIL = "fail", _("Fail")
    # Not checked: the data the check reads did not come (its telemetry source did not
    # answer: docs/checks.md, How a check run works) — never a pass, and nothing changes on it.
    ERROR = "error", _("Error")

    @classmethod
    def palette(cls) -> dict[str, str]:
        return {"pass": Hue.GREEN, "warn": Hue.AMBER, "fail": Hue.RED, "error": Hue.PURPLE}


# Every verdict but a pass, as an equality list: the results index (cluster, status) finds
# the few of them among a large fleet's passes, where `exclude(status="pass")` reads every
# result of the cluster.
NOT_PASSING = (ResultStatus.WARN, ResultStatus.FAIL, ResultStatus.ERROR)


SEVERITY_ORDER = {"pass": 0, "error": 1, "warn": 2, "fail": 3}


@css_prefix("run")
class RunStatus(ColouredChoices):
    """Where a check run is."""

    QUEUED = "queued", _("Queued")
    RUNNING = "running", _("Running")
    DONE = "done", _("Done")
    ERROR = "error", _("Error")

    @classmethod
    def palette(cls) -> dict[str, str]:
        return {"queued": Hue.GREY, "running": Hue.BLUE, "done": Hue.GREEN, "error": Hue.RED}
