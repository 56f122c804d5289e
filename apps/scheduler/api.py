"""Scheduler endpoints: the actuation log (docs/slurm.md, Actuation)."""

from __future__ import annotations

from rest_framework import generics

from apps.accounts.choices import READERS
from apps.scheduler.filters import ActuationFilter
from apps.scheduler.selectors import actuation_list
from apps.scheduler.serializers import ActuationSerializer


class ActuationListView(generics.ListAPIView):
    """`GET actuations/?cluster=&node=&action=&result=`: every drain and resume KUAE asked
    of a scheduler — pending, done, failed or skipped (dry run, a person's drain left
    alone) — newest first."""

    roles = {"GET": READERS}
    serializer_class = ActuationSerializer
    filterset_class = ActuationFilter

    def get_queryset(self):  # noqa: ANN201
        return actuation_list()
