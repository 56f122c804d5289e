"""Fleet endpoints: clusters, nodes, node state and heartbeats (docs/api.md, Clusters; Nodes)."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer
from rest_framework.views import APIView

from apps.accounts.choices import ADMINS, AGENTS, OPERATORS, READERS
from apps.common.dbconflicts import atomic_with_retry
from apps.common.limits import TOPOLOGY_NODES
from apps.common.parse import batch_items
from apps.fleet.filters import NodeFilter
from apps.fleet.models import Node
from apps.fleet.readers import open_incidents_of
from apps.fleet.scope import require_nodes
from apps.fleet.selectors import cluster_gpus, cluster_list, node_detail, node_list
from apps.fleet.serializers import (
    AutomationSerializer,
    ClusterDetailSerializer,
    ClusterSerializer,
    HeartbeatSerializer,
    NodeCreateSerializer,
    NodeDetailSerializer,
    NodeSerializer,
    NodeStateSerializer,
    TopologyResultSerializer,
    TopologySerializer,
)
from apps.fleet.services import (
    NodeSpec,
    cluster_automation_set,
    cluster_create,
    node_heartbeat,
    node_register,
    node_set_state,
    nodes_topology_set,
)


class ClusterListView(generics.ListCreateAPIView):
    """List clusters; admins create them."""

    roles = {"GET": READERS, "POST": ADMINS}
    serializer_class = ClusterSerializer

    def get_queryset(self):  # noqa: ANN201
        return cluster_list()

    def perform_create(self, serializer: BaseSerializer[Any]) -> None:
        cluster = cluster_create(**serializer.validated_data)
        serializer.instance = cluster_list().get(pk=cluster.pk)  # with its (zero) counts


class ClusterDetailView(generics.RetrieveUpdateAPIView):
    """One cluster by name, with `node_count`, `gpu_count` and where its GPUs are (`gpus`:
    allocated, idle, unavailable, by node state — docs/formulas.md, GPUs now), its Slurm connection
    and actuation mode (docs/slurm.md). Admins change them with PATCH."""

    roles = {"GET": READERS, "PATCH": ADMINS}
    http_method_names = ["get", "patch", "head", "options"]
    serializer_class = ClusterDetailSerializer
    lookup_field = "name"

    def get_queryset(self):  # noqa: ANN201
        return cluster_list()

    def get_object(self):  # noqa: ANN201
        cluster = super().get_object()
        cluster.gpu_account = cluster_gpus(cluster=cluster)
        return cluster


class ClusterAutomationView(APIView):
    """`POST clusters/{name}/automation/` `{paused, reason}`: while paused, the checks run,
    store results and open incidents, but change no node state and nothing is sent to the
    scheduler (docs/on-call.md, Pausing automation). Every page shows the pause and who set it."""

    roles = {"POST": OPERATORS}

    @extend_schema(request=AutomationSerializer, responses=ClusterDetailSerializer)
    def post(self, request: Request, name: str) -> Response:
        cluster = get_object_or_404(cluster_list(), name=name)
        data = AutomationSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        cluster_automation_set(
            cluster=cluster, by=request.user.get_username(), **data.validated_data
        )
        cluster.gpu_account = cluster_gpus(cluster=cluster)  # type: ignore[attr-defined]
        return Response(ClusterDetailSerializer(cluster).data)


class NodeListView(generics.ListAPIView):
    """`GET nodes/?cluster=&state=&rack=&sort=` (paginated); operators register with POST."""

    roles = {"GET": READERS, "POST": OPERATORS}
    serializer_class = NodeSerializer
    filterset_class = NodeFilter

    def get_queryset(self):  # noqa: ANN201
        return node_list()

    @extend_schema(
        request=NodeCreateSerializer, responses={201: NodeSerializer, 200: NodeSerializer}
    )
    def post(self, request: Request) -> Response:
        data = NodeCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        cluster = values.pop("cluster")
        node, created = node_register(cluster=cluster, spec=NodeSpec(**values))
        node.cluster = cluster
        return Response(
            NodeSerializer(node).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


class NodeTopologyView(APIView):
    """`POST nodes/topology/`: set where nodes sit — rack, switch, PDU, NVLink domain
    (docs/checks.md, Blast radius) — for up to 20,000 nodes at once, all or nothing."""

    roles = {"POST": OPERATORS}

    @extend_schema(request=TopologySerializer, responses=TopologyResultSerializer)
    def post(self, request: Request) -> Response:
        data = request.data
        items = batch_items(data, key="nodes", limit=TOPOLOGY_NODES)
        return Response(nodes_topology_set(items=items, user=request.user))


class NodeDetailView(APIView):
    """`GET nodes/{hostname}/`: state, last seen, GPUs with their latest values, and the open
    incidents naming it."""

    roles = {"GET": READERS}

    @extend_schema(responses=NodeDetailSerializer)
    def get(self, request: Request, hostname: str) -> Response:
        node = node_detail(hostname=hostname)
        if node is None:
            return Response({"detail": f"no node {hostname}"}, status=status.HTTP_404_NOT_FOUND)
        node.open_incidents = open_incidents_of([node.pk]).get(node.pk, [])  # type: ignore[attr-defined]
        return Response(NodeDetailSerializer(node).data)


class NodeStateView(APIView):
    """`POST nodes/{hostname}/state/`: record a state change (history kept)."""

    roles = {"POST": OPERATORS}

    @extend_schema(request=NodeStateSerializer, responses=NodeSerializer)
    def post(self, request: Request, hostname: str) -> Response:
        node = get_object_or_404(Node.objects.select_related("cluster"), hostname=hostname)
        data = NodeStateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        # racing an incident filed on the node: a conflict is retried here, not answered 503
        atomic_with_retry(node_set_state)(
            node=node, by=request.user.get_username(), **data.validated_data
        )
        return Response(NodeSerializer(node).data)


class HeartbeatView(APIView):
    """`POST nodes/{hostname}/heartbeat/`: 204; the server's receive time counts."""

    roles = {"POST": AGENTS}
    agent_scoped = True

    @extend_schema(request=HeartbeatSerializer, responses={204: None})
    def post(self, request: Request, hostname: str) -> Response:
        data = HeartbeatSerializer(data=request.data or {})
        data.is_valid(raise_exception=True)
        require_nodes(request.user, [hostname])
        node = get_object_or_404(Node, hostname=hostname)
        node_heartbeat(node=node)
        return Response(status=status.HTTP_204_NO_CONTENT)
