"""Telemetry endpoints of the node page: its charts as Plotly JSON."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import Http404, HttpRequest, JsonResponse
from django.utils import timezone

from apps.accounts.permissions import role_required
from apps.fleet.selectors import node_get
from apps.telemetry.charts import node_telemetry_figure
from apps.telemetry.gpu_charts import gpu_history_figure, message_figure
from apps.telemetry.gpu_history import node_gpu_history, window_from
from apps.telemetry.port_history import node_port_history


@role_required()
def node_telemetry_chart(request: HttpRequest, hostname: str) -> JsonResponse:
    """A node's telemetry rollups over the last 24 h as Plotly JSON (the node page polls it)."""
    node = node_get(hostname=hostname)
    if node is None:
        raise Http404(f"no node {hostname}")
    return JsonResponse(node_telemetry_figure(node=node))


def _window_chart(request: HttpRequest, hostname: str, history: Callable[..., Any]) -> JsonResponse:
    """A node's charts over `?range=` or `?start=&end=` as Plotly JSON, from `history`
    (node, window); a range that cannot be shown is a message figure (200)."""
    node = node_get(hostname=hostname)
    if node is None:
        raise Http404(f"no node {hostname}")
    window, problem = window_from(request.GET, now=timezone.now())
    if problem:
        return JsonResponse(message_figure(problem))
    return JsonResponse(gpu_history_figure(history(node=node, window=window)))


@role_required()
def node_gpu_chart(request: HttpRequest, hostname: str) -> JsonResponse:
    """A node's per-GPU charts over `?range=` (1h … 30d) or `?start=&end=` as Plotly JSON:
    from the cluster's Prometheus, else from KUAE's rollups. A source that does not answer
    is a message figure (200), so the page shows why rather than a broken chart."""
    return _window_chart(request, hostname, node_gpu_history)


@role_required()
def node_port_chart(request: HttpRequest, hostname: str) -> JsonResponse:
    """A node's NIC port charts over `?range=` or `?start=&end=` as Plotly JSON: per port
    from the cluster's Prometheus, else per node from KUAE's port rollups; a source that
    does not answer is a message figure (200), as for the GPU charts."""
    return _window_chart(request, hostname, node_port_history)
