"""Incidents on another app's page, lent to `common/panels.py` at start-up: the job page
(jobs') shows the job's incidents and what each cost, which it polls (`views_jobs.py`).
The jobs app reads a job's condition through `jobs/readers.py` but names no incident page;
the panel only reads."""

from __future__ import annotations

from typing import Any

from apps.common import panels
from apps.jobs.models import Job


def job_incidents(*, job: Job) -> dict[str, Any]:
    """What the job page's incidents card needs: the job (its incidents are polled)."""
    return {"job": job}


def panels_lend() -> None:
    """Lend the card (from `IncidentsConfig.ready()`): on the job page after the
    effective-rate card (reports', order 10)."""
    panels.lend(
        slot=panels.JOB,
        template="incidents/_job_incidents_card.html",
        context=job_incidents,
        order=20,
    )
