"""Repairs endpoints (docs/repairs.md): list, read and edit repairs; return a node."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.choices import ENGINEERS, OPERATORS, READERS
from apps.fleet.models import Node
from apps.repairs.filters import RepairFilter
from apps.repairs.models import Repair
from apps.repairs.selectors import repair_list
from apps.repairs.serializers import (
    RepairSerializer,
    RepairWriteSerializer,
    ReturnSerializer,
    flat_errors,
)
from apps.repairs.services import Step, node_return, repair_update

TRUE = {"1", "true", "yes", "on"}


class RepairListView(generics.ListAPIView):
    """`GET repairs/?cluster=&status=&node=` (paginated, newest first): a repair is opened
    when a node becomes drained or down (one open per node; a further drain or down is added
    to it), holds the reason, the incidents open then, the failing check results (evidence)
    and the steps done, and closes when the node is back in service. A drain's repair is
    listed within `KUAE_REPAIRS_SYNC_S` seconds (5 by default): the beat opens it, a read
    never does."""

    roles = {"GET": READERS}
    serializer_class = RepairSerializer
    filterset_class = RepairFilter

    def get_queryset(self):  # noqa: ANN201
        return repair_list()


class RepairDetailView(APIView):
    """`GET repairs/{id}/`; `PATCH` (engineers) `{steps?: [{action, at?, by?, note?,
    ticket?}], reason?}` replaces the steps (send them all) or the reason. The status moves
    only by returning the node (`POST nodes/{hostname}/return/`)."""

    roles = {"GET": READERS, "PATCH": ENGINEERS}

    @extend_schema(responses=RepairSerializer)
    def get(self, request: Request, pk: int) -> Response:
        repair = get_object_or_404(repair_list(), pk=pk)
        return Response(RepairSerializer(repair).data)

    @extend_schema(request=RepairWriteSerializer, responses=RepairSerializer)
    def patch(self, request: Request, pk: int) -> Response:
        repair = get_object_or_404(Repair.objects.all(), pk=pk)
        data = RepairWriteSerializer(data=request.data, context={"repair": repair})
        if not data.is_valid():
            return Response(flat_errors(data.errors), status=status.HTTP_400_BAD_REQUEST)
        values = data.validated_data
        steps = None
        if "steps" in values:
            steps = [Step(**s) for s in values["steps"]]
        repair_update(
            repair=repair, by=request.user.get_username(), steps=steps, reason=values.get("reason")
        )
        return Response(RepairSerializer(repair_list().get(pk=pk)).data)


class NodeReturnView(APIView):
    """`POST nodes/{hostname}/return/` (operators): the node's open repair goes to burn-in;
    the node stays out until every GPU reports a GEMM probe newer than this request that the
    slow-node and checksum comparisons pass, with no XID or ECC event since — then it is
    healthy and the repair closes by itself. `?skip_burn_in=1` (engineers) returns it at once,
    recorded on the repair. A node with no open repair → 400."""

    roles = {"POST": OPERATORS}

    @extend_schema(
        request=ReturnSerializer,
        responses=RepairSerializer,
        parameters=[
            OpenApiParameter(
                "skip_burn_in", OpenApiTypes.BOOL, description="engineers: healthy at once"
            )
        ],
    )
    def post(self, request: Request, hostname: str) -> Response:
        node = get_object_or_404(Node.objects.all(), hostname=hostname)
        body = ReturnSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        skip = body.validated_data["skip_burn_in"] or (
            request.query_params.get("skip_burn_in", "").lower() in TRUE
        )
        if skip and not request.user.has_role(ENGINEERS):  # type: ignore[union-attr]
            raise PermissionDenied("skip_burn_in: engineers only")
        repair = node_return(node=node, by=request.user.get_username(), skip_burn_in=skip)
        return Response(RepairSerializer(repair_list().get(pk=repair.pk)).data)
