"""Writes to a cluster's own settings: the automation pause (docs/on-call.md)."""

from __future__ import annotations

from django.utils import timezone

from apps.fleet.models import Cluster


def cluster_automation_set(*, cluster: Cluster, paused: bool, reason: str, by: str) -> Cluster:
    """Pause or resume the cluster's automation (docs/on-call.md, Pausing automation), recording
    who, when and why. Resuming keeps the last pause's reason and author for the record."""
    cluster.automation_paused = paused
    cluster.automation_reason = reason[:300]
    cluster.automation_by = by
    cluster.automation_at = timezone.now()
    cluster.save(
        update_fields=["automation_paused", "automation_reason", "automation_by", "automation_at"]
    )
    return cluster
