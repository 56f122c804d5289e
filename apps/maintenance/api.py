"""Maintenance endpoints (docs/maintenance.md): book, list, end or cancel windows."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.choices import OPERATORS, READERS
from apps.common.dbconflicts import atomic_with_retry
from apps.maintenance.filters import WindowFilter
from apps.maintenance.models import MaintenanceWindow
from apps.maintenance.selectors import jobs_touched, window_list
from apps.maintenance.serializers import (
    JobsNotConfirmedSerializer,
    SilencedAlertSerializer,
    StoppedJobSerializer,
    WindowBookedSerializer,
    WindowSerializer,
    WindowWriteSerializer,
)
from apps.maintenance.services import Booking, JobsNotConfirmed, window_book, window_end


class WindowListView(generics.ListAPIView):
    """`GET maintenance/?cluster=&active=true&status=&node=` (paginated, by start); operators
    book a window with POST `{cluster, nodes?: "hostlist" | [hostname], racks?: [rack],
    start?, end, reason}` (start defaults to now). While a window is in progress its nodes
    are in state `maintenance`, the checks skip them, Alertmanager alerts naming them are
    kept on the window as silenced, and the jobs running on them get planned interruptions
    (KUAE stops no job; one that reports progress is not interrupted)."""

    roles = {"GET": READERS, "POST": OPERATORS}
    serializer_class = WindowSerializer
    filterset_class = WindowFilter

    def get_queryset(self):  # noqa: ANN201
        return window_list()

    @extend_schema(
        request=WindowWriteSerializer,
        responses={201: WindowBookedSerializer, 409: JobsNotConfirmedSerializer},
    )
    def post(self, request: Request) -> Response:
        """Book a window. The answer names the running jobs on its nodes (`stops_jobs`),
        as the page does before it books; a client that sends `confirm_jobs` is refused
        (409, nothing booked) unless those are exactly the jobs.
        (docs/maintenance.md, Booking a window)"""
        data = WindowWriteSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            window = atomic_with_retry(window_book)(
                booking=Booking(**data.validated_data), by=request.user.get_username()
            )
        except JobsNotConfirmed as refused:
            named = ", ".join(f"{t.job.name} (#{t.job.pk}, {t.gpus} GPUs)" for t in refused.touched)
            body = {
                "confirm_jobs": [
                    f"the window stops these running jobs: {named}"
                    if refused.touched
                    else "the window stops no running job: confirm []"
                ],
                "stops_jobs": StoppedJobSerializer(refused.touched, many=True).data,
            }
            return Response(body, status=status.HTTP_409_CONFLICT)
        window = window_list().get(pk=window.pk)
        window.stops_jobs = jobs_touched(list(window.nodes.all()))  # type: ignore[attr-defined]
        return Response(WindowBookedSerializer(window).data, status=status.HTTP_201_CREATED)


class WindowDetailView(APIView):
    """`GET maintenance/{id}/`: one window with the alerts it silenced; `DELETE` (operators)
    ends it now — its nodes go back to the state they had — or cancels one not yet begun."""

    roles = {"GET": READERS, "DELETE": OPERATORS}

    @extend_schema(responses=WindowSerializer)
    def get(self, request: Request, pk: int) -> Response:
        window = get_object_or_404(window_list(), pk=pk)
        body = WindowSerializer(window).data
        alerts = window.silenced_alerts.select_related("node")[:500]
        body["silenced"] = SilencedAlertSerializer(alerts, many=True).data
        return Response(body)

    @extend_schema(responses={200: WindowSerializer})
    def delete(self, request: Request, pk: int) -> Response:
        window = get_object_or_404(MaintenanceWindow.objects.all(), pk=pk)
        atomic_with_retry(window_end)(
            window=window, now=timezone.now(), by=request.user.get_username()
        )
        return Response(WindowSerializer(window_list().get(pk=pk)).data)
