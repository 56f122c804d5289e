"""The cluster a page shows (docs/pages.md, The cluster a page shows): `?cluster=` wins and is
kept for the person's other pages; without a choice, the largest cluster (the most GPUs), not
the first by name; every per-cluster page has the switch."""

from __future__ import annotations

import pytest
from django.test import Client

from apps.fleet.models import Cluster
from apps.fleet.services import NodeSpec, cluster_create, nodes_register

pytestmark = pytest.mark.django_db

PAGES = ["/", "/reports/weekly/", "/reliability/", "/reports/trends/", "/gpus/", "/health/"]
PAGES += ["/topology/"]


@pytest.fixture
def fleet(users) -> dict[str, Cluster]:  # noqa: ANN001
    """kuae-mtt: 8 nodes × 8 GPUs (64), first by name; kuae-sim: 32 nodes × 8 GPUs (256)."""
    made = {}
    for name, n in (("kuae-mtt", 8), ("kuae-sim", 32)):
        made[name] = cluster_create(
            name=name, gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8
        )
        nodes_register(
            cluster=made[name], specs=[NodeSpec(hostname=f"{name}-{i:02d}") for i in range(n)]
        )
    return made


def _client(name: str = "mia") -> Client:
    client = Client()
    assert client.login(username=name, password="pw")
    return client


def _shown(client: Client, path: str) -> str:
    response = client.get(path)
    assert response.status_code == 200, path
    return response.context["cluster"].name


@pytest.mark.parametrize("path", PAGES)
def test_opens_on_the_largest_cluster(fleet, path) -> None:  # noqa: ANN001
    """No choice yet: the 256-GPU kuae-sim, not the 64-GPU kuae-mtt first by name; the page
    has the switch, labelled, with the shown cluster selected."""
    response = _client().get(path)
    assert response.context["cluster"].name == "kuae-sim"
    html = response.content.decode()
    assert "data-cluster-switch" in html and '<label for="cluster">Cluster</label>' in html
    assert '<option value="kuae-sim" selected>' in html


@pytest.mark.parametrize("chosen_on", ["/", "/reports/weekly/", "/nodes/", "/jobs/"])
def test_a_choice_is_kept_on_every_page(fleet, chosen_on) -> None:  # noqa: ANN001
    """Choosing kuae-mtt on one page opens every per-cluster page on it without `?cluster=`;
    an address naming the other still wins, and becomes the kept choice."""
    client = _client()
    client.get(f"{chosen_on}?cluster=kuae-mtt")
    assert [_shown(client, p) for p in PAGES] == ["kuae-mtt"] * len(PAGES)
    assert _shown(client, "/reliability/?cluster=kuae-sim") == "kuae-sim"
    assert _shown(client, "/reports/trends/") == "kuae-sim"


def test_a_pages_own_refresh_does_not_take_the_choice_back(fleet) -> None:  # noqa: ANN001
    """The overview's health line is fetched by its script with the page's cluster named; one
    sent by the kuae-sim overview and answered after the person chose kuae-mtt (seen in a
    browser test: the next page opened on kuae-sim) leaves their choice as it is."""
    client = _client()
    client.get("/?cluster=kuae-mtt")
    refresh = client.get("/health/summary/?cluster=kuae-sim", headers={"Sec-Fetch-Dest": "empty"})
    assert refresh.status_code == 200
    assert _shown(client, "/reports/weekly/") == "kuae-mtt"
    # a page opened naming the other cluster still makes it the choice
    client.get("/health/?cluster=kuae-sim", headers={"Sec-Fetch-Dest": "document"})
    assert _shown(client, "/reports/weekly/") == "kuae-sim"


def test_the_choice_is_each_persons(fleet) -> None:  # noqa: ANN001
    """One person's choice does not move another's pages; a choice of a cluster since
    deleted falls back to the largest; an unknown cluster named is a 404, not kept."""
    mia, otto = _client("mia"), _client("otto")
    mia.get("/?cluster=kuae-mtt")
    assert _shown(otto, "/reports/weekly/") == "kuae-sim"
    assert mia.get("/reliability/?cluster=nope").status_code == 404
    assert _shown(mia, "/reliability/") == "kuae-mtt"
    fleet["kuae-mtt"].nodes.all().delete()
    fleet["kuae-mtt"].delete()
    assert _shown(mia, "/reliability/") == "kuae-sim"


def test_the_switch_keeps_the_window_and_the_week(fleet) -> None:  # noqa: ANN001
    html = _client().get("/reliability/?days=30").content.decode()
    switch = html[
        html.index("data-cluster-switch") : html.index("</form>", html.index("data-cluster-switch"))
    ]
    assert '<input type="hidden" name="days" value="30">' in switch
