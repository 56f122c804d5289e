"""Incident endpoints: incidents, postmortems, Alertmanager alerts."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.shortcuts import get_object_or_404
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.choices import AGENTS, ENGINEERS, OPERATORS, READERS
from apps.accounts.permissions import acting_user, user_has_role
from apps.common.dbconflicts import atomic_with_retry
from apps.fleet.scope import require_cluster, scope_of
from apps.incidents.choices import Source
from apps.incidents.costs import costs_at, with_cost_order
from apps.incidents.filters import IncidentFilter, UnroutedAlertFilter
from apps.incidents.models import Incident, Postmortem, UnroutedAlert
from apps.incidents.policy import change_refusal
from apps.incidents.postmortems import (
    ActionSpec,
    postmortem_approve,
    postmortem_reject,
    postmortem_save,
    postmortem_submit,
)
from apps.incidents.serializers import (
    AlertmanagerResultSerializer,
    IncidentDetailSerializer,
    IncidentSerializer,
    IncidentWriteSerializer,
    PostmortemSerializer,
    ReviewSerializer,
    UnroutedAlertSerializer,
)
from apps.incidents.services import incident_open, incident_update
from apps.incidents.services_alerts import alertmanager_ingest
from apps.incidents.services_owners import incident_acknowledge


class IncidentListView(generics.ListAPIView):
    """`GET incidents/?cluster=&status=&category=&start=&end=&sort=-cost` (`order`, the
    former name of `sort`, is still read); engineers file with POST. Costs are read at one
    instant: an open incident's run up to it (docs/incidents.md, What it cost)."""

    roles = {"GET": READERS, "POST": ENGINEERS}
    serializer_class = IncidentSerializer
    filterset_class = IncidentFilter

    def get_queryset(self):  # noqa: ANN201
        self.now = timezone.now()
        incidents = (
            Incident.objects.select_related("cluster", "job")
            .prefetch_related("nodes")
            .order_by("-detected_at", "-id")
        )
        return with_cost_order(incidents, now=self.now)

    def get_serializer(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201
        if args and isinstance(args[0], list):
            args = (costs_at(args[0], now=self.now), *args[1:])
        return super().get_serializer(*args, **kwargs)

    @extend_schema(request=IncidentWriteSerializer, responses={201: IncidentDetailSerializer})
    def post(self, request: Request) -> Response:
        data = IncidentWriteSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        incident = atomic_with_retry(incident_open)(
            cluster=values.pop("cluster"),
            nodes=values.pop("nodes", []),
            source=Source.MANUAL,
            actor=request.user.get_username(),
            **values,
        )
        costs_at([incident], now=timezone.now())
        return Response(IncidentDetailSerializer(incident).data, status=status.HTTP_201_CREATED)


class IncidentDetailView(APIView):
    """`GET incidents/{id}/` with its timeline; `PATCH` by engineers (operators: status
    investigating/mitigated and the times)."""

    roles = {"GET": READERS, "PATCH": OPERATORS}

    @extend_schema(responses=IncidentDetailSerializer)
    def get(self, request: Request, pk: int) -> Response:
        incident = get_object_or_404(Incident.objects.select_related("cluster", "job"), pk=pk)
        costs_at([incident], now=timezone.now())
        return Response(IncidentDetailSerializer(incident).data)

    @extend_schema(request=IncidentWriteSerializer, responses=IncidentDetailSerializer)
    def patch(self, request: Request, pk: int) -> Response:
        incident = get_object_or_404(Incident.objects.select_related("cluster"), pk=pk)
        data = IncidentWriteSerializer(instance=incident, data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        values.pop("cluster", None)
        refusal = change_refusal(engineer=user_has_role(request.user, ENGINEERS), changes=values)
        if refusal:
            raise PermissionDenied(refusal)
        nodes = values.pop("nodes", None)

        def write() -> Incident:
            # a retry starts from the row as stored: incident_update changes the object it is
            # given, and its timeline line names the fields that differ from it
            fresh = Incident.objects.select_related("cluster").get(pk=pk)
            return incident_update(
                incident=fresh,
                changes=values,
                nodes=nodes,
                actor=request.user.get_username(),
                by_person=True,
            )

        incident = atomic_with_retry(write)()
        costs_at([incident], now=timezone.now())
        return Response(IncidentDetailSerializer(incident).data)


class IncidentAckView(APIView):
    """`POST incidents/{id}/ack/`: acknowledge in one step — an open incident becomes
    investigating, with who and when and one timeline line; a second acknowledgement
    changes and writes nothing (docs/on-call.md, Owners and acknowledgement)."""

    roles = {"POST": OPERATORS}

    @extend_schema(request=None, responses=IncidentDetailSerializer)
    def post(self, request: Request, pk: int) -> Response:
        incident = get_object_or_404(Incident.objects.select_related("cluster", "job"), pk=pk)
        atomic_with_retry(incident_acknowledge)(
            incident=incident, actor=request.user.get_username()
        )
        costs_at([incident], now=timezone.now())
        return Response(IncidentDetailSerializer(incident).data)


class AlertmanagerView(APIView):
    """`POST ingest/alertmanager/`: Alertmanager's webhook (version 4). A well-formed
    webhook is always 200 — an alert placed nowhere is kept as an unrouted alert."""

    roles = {"POST": AGENTS}
    agent_scoped = True

    @extend_schema(
        request={"application/json": dict}, responses={200: AlertmanagerResultSerializer}
    )
    def post(self, request: Request) -> Response:
        scope = scope_of(request.user)
        if scope is not None:  # a node's token: 403; a cluster's: others' alerts are unrouted
            require_cluster(request.user, scope.cluster_name)
        # An HA pair's copies race: a deadlock between them is retried, not answered 503.
        counts = atomic_with_retry(alertmanager_ingest)(
            payload=request.data, within=scope.cluster_id if scope else None
        )
        return Response(AlertmanagerResultSerializer(counts).data)


class UnroutedAlertListView(generics.ListAPIView):
    """`GET alerts/unrouted/?since=&status=&sort=`: alerts kept without an incident, latest
    delivery first."""

    roles = {"GET": READERS}
    serializer_class = UnroutedAlertSerializer
    filterset_class = UnroutedAlertFilter
    queryset = UnroutedAlert.objects.order_by("-received_at", "-id")


def _postmortem_body(postmortem: Postmortem) -> dict:
    data = PostmortemSerializer(postmortem).data
    data["timeline"] = postmortem.timeline
    data["action_items"] = [
        {"text": a.text, "owner": a.owner.username, "due": a.due, "done": a.done}
        for a in postmortem.action_items.select_related("owner")
    ]
    return data


class PostmortemView(APIView):
    """`GET/PUT incidents/{id}/postmortem/`: engineers write the draft. Whoever last changed
    its content is its `author`."""

    roles = {"GET": READERS, "PUT": ENGINEERS}

    @extend_schema(responses=PostmortemSerializer)
    def get(self, request: Request, pk: int) -> Response:
        postmortem = get_object_or_404(
            Postmortem.objects.select_related("author", "reviewer"), incident_id=pk
        )
        return Response(_postmortem_body(postmortem))

    @extend_schema(request=PostmortemSerializer, responses=PostmortemSerializer)
    def put(self, request: Request, pk: int) -> Response:
        incident = get_object_or_404(Incident, pk=pk)
        data = PostmortemSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        postmortem = postmortem_save(
            incident=incident,
            by=acting_user(request),
            summary=v["summary"],
            root_cause=v["root_cause"],
            category=v["category"],
            contributing_factors=v.get("contributing_factors", ""),
            timeline=[
                {"at": t["at"].isoformat(), "text": t["text"]} for t in v.get("timeline", [])
            ],
            action_items=[ActionSpec(**a) for a in v.get("action_items", [])],
        )
        return Response(_postmortem_body(postmortem))


class PostmortemActionView(APIView):
    """`POST incidents/{id}/postmortem/submit|approve|reject/`: any engineer submits a
    written draft (its author stays whoever last changed its content); approving or
    rejecting needs an engineer who changed none of it, else 403; approving waits until the
    incident is resolved or closed (400 naming `incident_status`: its cost still grows)."""

    roles = {"POST": ENGINEERS}
    action = ""

    @extend_schema(request=ReviewSerializer, responses=PostmortemSerializer)
    def post(self, request: Request, pk: int) -> Response:
        postmortem = get_object_or_404(Postmortem.objects.select_related("author"), incident_id=pk)
        data = ReviewSerializer(data=request.data or {})
        data.is_valid(raise_exception=True)
        step = {
            "submit": postmortem_submit,
            "approve": postmortem_approve,
            "reject": postmortem_reject,
        }[self.action]
        try:
            postmortem = step(
                postmortem=postmortem,
                by=acting_user(request),
                comment=data.validated_data["comment"],
            )
        except DjangoPermissionDenied as exc:
            raise PermissionDenied(str(exc)) from exc
        return Response(_postmortem_body(postmortem))
