"""One small interface to a cluster's scheduler (docs/slurm.md): read jobs, read nodes,
drain, resume. `cli` and `rest` implement it for Slurm; a Kubernetes cordon/taint one could
be added without touching the callers."""

from __future__ import annotations

import datetime as dt
from typing import Any, Protocol

from django.conf import settings

from apps.fleet.choices import SchedulerKind
from apps.fleet.models import Cluster


class SchedulerUnavailable(Exception):
    """The scheduler did not answer (down, timed out, unreachable): try again later."""


class SchedulerRefused(Exception):
    """The scheduler answered and refused the request: trying again will not help."""


class SchedulerConnection(Protocol):
    """What KUAE needs of a scheduler. Reads return the scheduler's own JSON documents,
    which the intake parses (so a recorded answer and a live one take the same path)."""

    def describe(self) -> str:
        """Where it connects, for messages: `slurm cli (/etc/slurm/slurm.conf)`."""
        ...

    def jobs_active(self) -> Any:
        """Running and pending jobs (`squeue --json`, `/slurm/…/jobs`)."""
        ...

    def jobs_since(self, since: dt.datetime) -> Any:
        """Jobs that ran or ended since `since`, every attempt (`sacct --json`,
        `/slurmdb/…/jobs`)."""
        ...

    def nodes(self) -> Any:
        """Every node with its state and reason (`sinfo --json`, `/slurm/…/nodes`)."""
        ...

    def drain(self, node: str, reason: str) -> None:
        """Stop placing work on `node`, with `reason`."""
        ...

    def resume(self, node: str) -> None:
        """Return `node` to scheduling."""
        ...


def connection_for(cluster: Cluster) -> SchedulerConnection | None:
    """The cluster's scheduler connection, or None when it names none."""
    timeout = float(settings.KUAE_SLURM_TIMEOUT_S)
    if cluster.slurm_kind == SchedulerKind.CLI:
        from apps.scheduler.slurm_cli import SlurmCli

        return SlurmCli(conf=cluster.slurm_url or settings.KUAE_SLURM_CONF, timeout_s=timeout)
    if cluster.slurm_kind == SchedulerKind.REST:
        from apps.scheduler.slurm_rest import SlurmRest

        return SlurmRest(url=cluster.slurm_url, token=settings.KUAE_SLURM_JWT, timeout_s=timeout)
    return None
