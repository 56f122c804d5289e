"""Reports on another app's page, lent to `common/panels.py` at start-up: the job page
(jobs') shows the job's effective rate and lost hours as the weekly report counts them,
which it polls (`views_jobs.py`). The jobs app knows no report; the panel only reads."""

from __future__ import annotations

from typing import Any

from apps.common import panels
from apps.jobs.models import Job


def job_effective(*, job: Job) -> dict[str, Any]:
    """What the job page's effective-rate card needs: the job (its figures are polled)."""
    return {"job": job}


def panels_lend() -> None:
    """Lend the card (from `ReportsConfig.ready()`): on the job page after its progress
    chart, before the incidents' card (order 20)."""
    panels.lend(
        slot=panels.JOB,
        template="reports/_job_effective_card.html",
        context=job_effective,
        order=10,
    )
