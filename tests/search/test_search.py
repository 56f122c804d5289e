"""The header's search (issue 18, item 6): each kind found, one match opens it, bounded,
readers only."""

from __future__ import annotations

import pytest
from django.utils import timezone

from apps.incidents.services import incident_open
from apps.jobs.services import job_create
from apps.search.selectors import search

pytestmark = pytest.mark.django_db


@pytest.fixture
def reader(client, users):  # noqa: ANN001, ANN201
    client.force_login(users["mia"])
    return client


@pytest.fixture
def incident(cluster, nodes):  # noqa: ANN001, ANN201
    return incident_open(
        cluster=cluster,
        title="NVLink errors on gpu003",
        category="gpu",
        severity="sev2",
        detected_at=timezone.now(),
        nodes=nodes[3:4],
        actor="erin",
    )


def test_one_hostname_opens_the_node(reader, nodes):
    response = reader.get("/search/?q=gpu003")
    assert response.status_code == 302 and response["Location"] == "/nodes/gpu003/"
    assert reader.get("/search/?q=GPU003")["Location"] == "/nodes/gpu003/"


def test_an_exact_hostname_opens_the_node_even_when_incidents_name_it(reader, incident, job):
    """docs/pages.md, Words a person uses: an exact hostname goes to its node, as an exact
    job id goes to the job."""
    job.name = "burn-in gpu003"
    job.save(update_fields=["name"])
    response = reader.get("/search/?q=gpu003")  # the incident and the job also name it
    assert response.status_code == 302 and response["Location"] == "/nodes/gpu003/"


def test_a_switch_name_lists_its_nodes_and_links_the_topology(reader, nodes):
    from apps.fleet.models import Node

    Node.objects.filter(hostname__in=["gpu001", "gpu002", "gpu005"]).update(switch="leaf-010")
    Node.objects.filter(hostname="gpu006").update(switch="leaf-011")
    html = reader.get("/search/?q=leaf-010").content.decode()
    assert "Nothing matches" not in html
    for host in ("gpu001", "gpu002", "gpu005"):
        assert f'href="/nodes/{host}/"' in html
    assert 'href="/nodes/gpu006/"' not in html and 'href="/nodes/gpu000/"' not in html
    assert "Nodes on switch <b" in html
    assert 'href="/topology/?cluster=c1&amp;component=switch:leaf-010#switch:leaf-010"' in html
    assert reader.get("/search/?q=LEAF-010").content.decode().count('href="/nodes/gpu') == 3


def test_a_hostlist_lists_its_nodes(reader, nodes):
    html = reader.get("/search/?q=gpu[001-003,007]").content.decode()
    for host in ("gpu001", "gpu002", "gpu003", "gpu007"):
        assert f'href="/nodes/{host}/"' in html
    assert 'href="/nodes/gpu004/"' not in html and "Nodes" in html
    assert "Not a hostlist" in reader.get("/search/?q=gpu[9-1]").content.decode()


def test_part_of_a_hostname_lists_the_nodes(reader, nodes):
    html = reader.get("/search/?q=gpu00").content.decode()
    assert html.count('href="/nodes/gpu00') == 8


def test_jobs_by_name_id_and_slurm_id(reader, cluster, nodes, job):
    job.external_id = "884211"
    job.save(update_fields=["external_id"])
    assert reader.get("/search/?q=llama-70b")["Location"] == f"/jobs/{job.pk}/"
    assert reader.get("/search/?q=884211")["Location"] == f"/jobs/{job.pk}/"
    by_id = reader.get(f"/search/?q={job.pk}")  # also incident number job.pk, if any
    assert by_id.status_code in (200, 302) and f"/jobs/{job.pk}/" in (
        by_id.get("Location") or by_id.content.decode()
    )
    job_create(cluster=cluster, nodes=nodes[4:], name="llama-8b", gpu_count=32, status="running")
    html = reader.get("/search/?q=llama").content.decode()
    assert "llama-70b" in html and "llama-8b" in html and "Jobs" in html


def test_incident_number_with_or_without_hash(reader, incident):
    assert reader.get(f"/search/?q=%23{incident.pk}")["Location"] == f"/incidents/{incident.pk}/"
    assert reader.get("/search/?q=NVLink errors")["Location"] == f"/incidents/{incident.pk}/"


def test_nothing_found_and_empty_query(reader, nodes):
    assert "Nothing matches" in reader.get("/search/?q=zzz-none").content.decode()
    assert reader.get("/search/?q=").status_code == 200


def test_each_kind_is_bounded(cluster, nodes):
    found = search("gpu", limit=3)
    assert len(found.nodes.items) == 3 and found.nodes.more and found.only() is None
    big = search("x[1-99999999]")  # past the hostlist bound: a note, no expansion
    assert "Not a hostlist" in big.note and not big.nodes.items


def test_readers_only(client, users, nodes):
    assert client.get("/search/?q=gpu001").status_code == 302  # to the sign-in page
    client.force_login(users["ada"])  # an agent is not a reader
    assert client.get("/search/?q=gpu001").status_code == 403


def test_header_has_the_search_box(reader, nodes):
    html = reader.get("/nodes/").content.decode()
    assert 'role="search"' in html and 'id="site-search"' in html and 'action="/search/"' in html
