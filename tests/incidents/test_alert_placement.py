"""Where an Alertmanager alert lands (docs/alertmanager.md, Placement): the first of `node`,
`hostname`, `Hostname`, `instance` naming a known node — by hostname, short name of an FQDN,
host:port or one of the node's addresses — else the `cluster` label, else unrouted."""

from __future__ import annotations

import pytest

from apps.fleet.services import NodeSpec, cluster_create, nodes_register
from apps.incidents.models import Incident, UnroutedAlert
from tests.incidents.webhooks import URL, alert, webhook

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet(cluster):  # noqa: ANN001, ANN201
    other = cluster_create(name="c2", gpu_model="A100", peak_tflops_per_gpu=312, gpus_per_node=8)
    nodes_register(
        cluster=cluster,
        specs=[
            NodeSpec(hostname="gpu-a017"),
            NodeSpec(
                hostname="gpu-a018", addresses=("10.0.3.18", "fd00::18", "bmc-18.oob.example.net")
            ),
        ],
    )
    nodes_register(cluster=other, specs=[NodeSpec(hostname="gpu-b001")])
    return cluster, other


def place(api, **labels):  # noqa: ANN001, ANN003, ANN201
    """Post one alert with these labels; the incident's (cluster, nodes), or None."""
    answer = api("ada").post(URL, webhook(alert("fp", **labels)), format="json")
    assert answer.status_code == 200, answer.json()
    incident = Incident.objects.filter(fingerprint="am:fp").first()
    if incident is None:
        assert UnroutedAlert.objects.filter(fingerprint="fp").exists()
        return None
    return incident.cluster.name, list(incident.nodes.values_list("hostname", flat=True))


@pytest.mark.parametrize(
    "labels,where",
    [
        ({"node": "gpu-a017"}, ("c1", ["gpu-a017"])),
        ({"hostname": "gpu-a017.dc1.example.com"}, ("c1", ["gpu-a017"])),
        ({"Hostname": "GPU-A017"}, ("c1", ["gpu-a017"])),
        ({"instance": "gpu-a017:9400"}, ("c1", ["gpu-a017"])),
        ({"instance": "gpu-a017.dc1.example.com:9100"}, ("c1", ["gpu-a017"])),
        ({"instance": "10.0.3.18:9100"}, ("c1", ["gpu-a018"])),
        ({"instance": "[fd00:0::18]:9100"}, ("c1", ["gpu-a018"])),
        ({"Hostname": "BMC-18.oob.example.net"}, ("c1", ["gpu-a018"])),
        ({"node": "gpu-zzz", "instance": "gpu-b001:9100"}, ("c2", ["gpu-b001"])),
        ({"node": "gpu-a017", "instance": "gpu-b001:9100"}, ("c1", ["gpu-a017"])),
        ({"instance": "gpu-b001:9100", "cluster": "c1"}, ("c2", ["gpu-b001"])),
        ({"instance": "gpu-zzz:9100", "cluster": "c2"}, ("c2", [])),
        ({"cluster": "c1"}, ("c1", [])),
        ({"instance": "gpu-zzz:9100", "cluster": "nope"}, None),
        ({"instance": "10.0.3.99:9100"}, None),
        ({}, None),
    ],
)
def test_placement(api, fleet, labels, where):
    assert place(api, **labels) == where
