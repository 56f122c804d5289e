"""Host readings through the telemetry intake (`host` beside `samples` and `ports`): one store
for every kind, each (node, kind, subject) with its latest and previous reading, applied once,
bounded, scoped, all or nothing with the batch; shown on the node page's Host card and by
`GET nodes/{hostname}/host/` (docs/integrations.md, Host readings)."""

from __future__ import annotations

import datetime as dt
from types import MappingProxyType

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from apps.accounts.choices import Role
from apps.accounts.services import token_issue, user_create_or_update
from apps.common.limits import HOST_SUBJECTS_PER_NODE
from apps.fleet.models import Node
from apps.fleet.selectors import node_detail
from apps.fleet.services import agent_scope_set
from apps.health.checks.storage import StorageLimits, filesystems
from apps.health.detectors.storage import storage
from apps.telemetry.host_card import byte_size, offset_text
from apps.telemetry.host_kinds import HOST_KINDS, PSEUDO_FILESYSTEMS, HostKind, Value, clock_name
from apps.telemetry.models import HostReading, Port
from apps.telemetry.mounts import MountState, mount_state
from apps.telemetry.panels import node_host

pytestmark = pytest.mark.django_db

URL = "/api/v1/ingest/telemetry/"
T0 = timezone.now().replace(microsecond=0) - dt.timedelta(minutes=10)
TIB = 2**40


def iso(t: dt.datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def host(node: str, kind: str, subject: str, at: dt.datetime = T0, **values):  # noqa: ANN003, ANN201
    return {"node": node, "kind": kind, "subject": subject, "ts": iso(at), "values": values}


def memory(node: str = "gpu000", at: dt.datetime = T0, ce: int = 0, ue: int = 0):  # noqa: ANN201
    return host(node, "memory", "mc0", at, ce_total=ce, ue_total=ue)


def mount(node: str, path: str, fstype: str = "nfs4", **values):  # noqa: ANN003, ANN201
    values = {"device": "nas:/ckpt", "fstype": fstype, "readonly": 0, "device_error": 0,
              "size_bytes": 4 * TIB, "avail_bytes": TIB, **values}  # fmt: skip
    return host(node, "filesystem", path, **values)


def post(client, **body):  # noqa: ANN001, ANN003, ANN201
    return client.post(URL, body, format="json")


@pytest.fixture
def ada(api):  # noqa: ANN001, ANN201
    return api("ada")


def test_every_kind_is_one_declaration_in_one_table(ada, nodes):
    """The four kinds of readings land in one table, values as declared and typed: sysfs's
    text of a link speed is read as its number, a flag may be JSON's true, a 64-bit counter
    stays exact; a JSON post is the agent's unless it says otherwise."""
    body = [
        memory(ce=3, ue=0),
        mount("gpu000", "/checkpoints/"),
        host("gpu000", "pcie", "17:00.0", role="GPU", link_width=8, max_link_width=16,
             link_speed_gts="32.0 GT/s PCIe", max_link_speed_gts=32,
             aer_correctable_total=2**64 - 1, aer_nonfatal_total=0, aer_fatal_total=0),
        {**host("gpu000", "clock", "system", offset_s=-0.0123, synced=True),
         "source": "node_exporter"},
    ]  # fmt: skip
    response = post(ada, host=body)
    assert response.status_code == 202, response.content
    assert response.json() == {
        "accepted": 0, "applied": 0, "stale": 0, "events": 0, "ports": 0, "ports_stale": 0,
        "host": 4, "host_stale": 0, "host_skipped": 0,
    }  # fmt: skip
    stored = {(r.kind, r.subject): r for r in HostReading.objects.filter(node__hostname="gpu000")}
    assert set(stored) == {("memory", "mc0"), ("filesystem", "/checkpoints"),
                           ("pcie", "0000:17:00.0"), ("clock", "system")}  # fmt: skip
    pcie = stored[("pcie", "0000:17:00.0")].values
    assert pcie["role"] == "gpu" and pcie["link_speed_gts"] == 32 and pcie["link_width"] == 8
    assert pcie["aer_correctable_total"] == 2**64 - 1  # exact, not a float
    clock = stored[("clock", "system")]
    assert clock.values == {"offset_s": -0.0123, "synced": 1} and clock.source == "node_exporter"
    assert stored[("memory", "mc0")].source == "agent"
    assert stored[("filesystem", "/checkpoints")].values["size_bytes"] == 4 * TIB
    assert Node.objects.get(hostname="gpu000").last_seen_at is not None  # a sign of life
    assert HostReading._meta.get_field("kind").choices is None  # a kind is no database choice


def test_a_new_kind_is_a_declaration_and_nothing_else(ada, browser, nodes, monkeypatch):
    """A kind added to the table alone is accepted, stored, answered and shown (value by
    value): no model, no migration, no other code."""
    nvme = HostKind(
        slug="nvme",
        label="NVMe media",
        subject="an NVMe controller",
        example="nvme0",
        read_subject=clock_name,
        values=(Value("media_errors", "counter", "media errors"),),
    )
    kinds = MappingProxyType({**HOST_KINDS, "nvme": nvme})
    for module in ("host", "services.host", "host_card"):
        monkeypatch.setattr(f"apps.telemetry.{module}.HOST_KINDS", kinds)
    answer = post(ada, host=[host("gpu000", "nvme", "nvme0", media_errors=7)])
    assert answer.status_code == 202 and answer.json()["host"] == 1, answer.content
    assert HostReading.objects.get(kind="nvme").values == {"media_errors": 7}
    bad = post(ada, host=[host("gpu000", "nvme", "nvme0", media_errors=-1)])
    assert "host[0].values.media_errors" in bad.json()
    html = browser.get("/nodes/gpu000/").content.decode()
    assert "NVMe media" in html and 'data-label="media errors">7<' in html


def test_hostnames_are_lower_cased_at_the_door(ada, nodes):
    assert post(ada, host=[memory("GPU001")]).status_code == 202
    assert HostReading.objects.get().node.hostname == "gpu001"


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"kind": "nvme"}, "host[1].kind"),
        ({"values": {"ce_total": 1, "bogus": 2}}, "host[1].values.bogus"),
        ({"values": {"ce_total": -1}}, "host[1].values.ce_total"),
        ({"values": {"ce_total": 1.5}}, "host[1].values.ce_total"),
        ({"values": {"ce_total": "3"}}, "host[1].values.ce_total"),
        ({"values": {"ue_total": 2**64}}, "host[1].values.ue_total"),
        ({"values": {"ue_total": True}}, "host[1].values.ue_total"),
        ({"values": {}}, "host[1].values"),
        ({"values": {"ce_total": None}}, "host[1].values"),
        ({"values": [1]}, "host[1].values"),
        ({"subject": "dimm0"}, "host[1].subject"),
        ({"subject": None}, "host[1].subject"),
        ({"ts": "yesterday"}, "host[1].ts"),
        ({"ts": iso(timezone.now() + dt.timedelta(hours=1))}, "host[1].ts"),
        ({"node": None}, "host[1].node"),
        ({"node": "nobody"}, "host[1].node"),
        ({"source": "ipmi"}, "host[1].source"),
        ({"kind": "clock", "subject": "system", "values": {"offset_s": 1e300}},
         "host[1].values.offset_s"),
        ({"kind": "clock", "subject": "system", "values": {"synced": 2}}, "host[1].values.synced"),
        ({"kind": "filesystem", "subject": "checkpoints", "values": {"readonly": 0}},
         "host[1].subject"),
        ({"kind": "filesystem", "subject": "/c", "values": {"avail_bytes": -1}},
         "host[1].values.avail_bytes"),
        ({"kind": "filesystem", "subject": "/c", "values": {"fstype": "nfs 4"}},
         "host[1].values.fstype"),
        ({"kind": "pcie", "subject": "0000:17:00.0", "values": {"link_width": 64}},
         "host[1].values.link_width"),
        ({"kind": "pcie", "subject": "0000:17:00.0", "values": {"link_speed_gts": "fast"}},
         "host[1].values.link_speed_gts"),
        ({"kind": "pcie", "subject": "not-pci", "values": {"link_width": 16}}, "host[1].subject"),
    ],
)  # fmt: skip
def test_a_bad_host_reading_refuses_the_whole_batch_naming_it(ada, nodes, entry, field):
    """A bad host reading is a 400 naming `host[i].field`, and nothing of the batch is
    stored: not its samples, not its ports, not its other host readings."""
    sample = {"node": "gpu000", "gpu": 0, "ts": iso(T0), "metrics": {"temp_c": 50}}
    port = {"node": "gpu000", "device": "mlx5_0", "port": 1, "ts": iso(T0),
            "metrics": {"state": "ACTIVE", "link_downed": 0}}  # fmt: skip
    bad = {**memory("gpu001"), **entry}
    response = post(ada, samples=[sample], ports=[port], host=[memory(), bad])
    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
    assert not HostReading.objects.exists() and not Port.objects.exists()
    assert not nodes[0].gpus.filter(updated_at__isnull=False).exists()


def test_the_errors_say_what_is_allowed(ada, nodes):
    kind = post(ada, host=[{**memory(), "kind": "nvme"}]).json()["host[0].kind"][0]
    assert "unknown kind 'nvme'" in kind and "memory, filesystem, pcie, clock" in kind
    name = post(ada, host=[memory() | {"values": {"ce_totl": 1}}]).json()
    assert "unknown value 'ce_totl'" in name["host[0].values.ce_totl"][0]
    assert "ce_total, ue_total" in name["host[0].values.ce_totl"][0]
    assert post(ada, host="mc0").json() == {"host": ["must be a list"]}
    assert "samples" in post(ada, samples=[], ports=[], host=[]).json()


def test_a_bad_sample_or_port_refuses_the_host_readings_too(ada, nodes):
    bad_sample = {"node": "gpu000", "gpu": 0, "ts": iso(T0), "metrics": {"temp_c": "hot"}}
    response = post(ada, samples=[bad_sample], host=[memory()])
    assert response.status_code == 400 and "samples[0].metrics.temp_c" in response.json()
    unknown_gpu = {"node": "gpu000", "gpu": 99, "ts": iso(T0), "metrics": {"temp_c": 50}}
    response = post(ada, samples=[unknown_gpu], host=[memory()])  # refused while writing
    assert response.status_code == 400 and "samples[0].gpu" in response.json()
    assert not HostReading.objects.exists()


def test_samples_ports_and_host_readings_are_stored_together(ada, nodes):
    sample = {"node": "gpu002", "gpu": 0, "ts": iso(T0), "metrics": {"temp_c": 50}}
    port = {"node": "gpu002", "device": "mlx5_0", "port": 1, "ts": iso(T0),
            "metrics": {"state": "ACTIVE", "link_downed": 0}}  # fmt: skip
    answer = post(ada, samples=[sample], ports=[port], host=[memory("gpu002")]).json()
    assert (answer["applied"], answer["ports"], answer["host"]) == (1, 1, 1)
    assert HostReading.objects.filter(node__hostname="gpu002").count() == 1


def test_each_reading_is_applied_once_and_the_previous_one_kept(ada, nodes):
    """Latest and previous rotate; a re-post or an older reading is stale and changes
    nothing; a counter that went down is stored as it is (it was reset)."""
    t1, t2, t3 = (T0 + dt.timedelta(minutes=m) for m in (1, 2, 3))
    body = [memory("gpu003", T0, ce=5), memory("gpu003", t1, ce=9)]
    assert post(ada, host=body).json()["host"] == 2
    row = HostReading.objects.get()
    assert (row.values["ce_total"], row.prev_values["ce_total"]) == (9, 5)
    assert (row.ts, row.prev_ts) == (t1, T0)
    again = post(ada, host=body).json()
    assert (again["host"], again["host_stale"]) == (0, 2)
    older = post(ada, host=[memory("gpu003", T0 - dt.timedelta(minutes=5), ce=0)]).json()
    assert older["host_stale"] == 1
    row.refresh_from_db()
    assert (row.values["ce_total"], row.ts) == (9, t1)
    # A reset: lower than before, stored, never refused.
    assert post(ada, host=[memory("gpu003", t2, ce=1, ue=0)]).status_code == 202
    row.refresh_from_db()
    assert row.values == {"ce_total": 1, "ue_total": 0}
    assert row.prev_values == {"ce_total": 9, "ue_total": 0}
    assert (row.ts, row.prev_ts) == (t2, t1)
    # Only the latest and the previous are kept: still one row, whatever the readings.
    post(ada, host=[memory("gpu003", t3, ce=2)])
    row.refresh_from_db()
    assert HostReading.objects.count() == 1 and row.prev_values["ce_total"] == 1


def test_pseudo_filesystems_are_counted_not_stored(ada, nodes):
    body = [
        mount("gpu004", "/checkpoints"),
        mount("gpu004", "/run", fstype="tmpfs"),
        mount("gpu004", "/var/lib/docker/overlay2/x/merged", fstype="overlay"),
        mount("gpu004", "/sys/fs/cgroup", fstype="CGROUP2"),
        mount("gpu004", "/", fstype="ext4"),
    ]
    answer = post(ada, host=body).json()
    assert (answer["host"], answer["host_skipped"]) == (2, 3)
    assert sorted(HostReading.objects.values_list("subject", flat=True)) == ["/", "/checkpoints"]
    assert {"tmpfs", "overlay", "proc", "sysfs", "squashfs", "cgroup2"} <= PSEUDO_FILESYSTEMS
    assert "nfs4" not in PSEUDO_FILESYSTEMS and "fuse.juicefs" not in PSEUDO_FILESYSTEMS


def test_at_most_256_subjects_a_node(ada, nodes):
    many = [mount("gpu005", f"/m{i}", fstype="xfs") for i in range(HOST_SUBJECTS_PER_NODE - 1)]
    assert post(ada, host=[*many, memory("gpu005")]).json()["host"] == HOST_SUBJECTS_PER_NODE
    # A stored subject again is no new one; a new subject is past the bound.
    later = T0 + dt.timedelta(minutes=1)
    refused = post(ada, host=[memory("gpu006"), memory("gpu005", later, ce=1),
                              host("gpu005", "clock", "system", later, synced=1)])  # fmt: skip
    assert refused.status_code == 400
    assert "256 subjects per node" in refused.json()["host[2].subject"][0]
    assert HostReading.objects.count() == HOST_SUBJECTS_PER_NODE
    assert HostReading.objects.get(node__hostname="gpu005", kind="memory").values["ce_total"] == 0
    at_once = [mount("gpu007", f"/m{i}", fstype="xfs") for i in range(HOST_SUBJECTS_PER_NODE + 1)]
    at_once.insert(3, mount("gpu007", "/dev/shm", fstype="tmpfs"))  # skipped: not counted
    response = post(ada, host=at_once)
    assert response.status_code == 400 and "host[257].subject" in response.json()
    assert not HostReading.objects.filter(node__hostname="gpu007").exists()


def test_a_node_token_speaks_only_for_its_own_nodes(cluster, nodes):
    user = user_create_or_update(username="n0", role=Role.AGENT)
    agent_scope_set(user=user, cluster=cluster, hostlist="gpu000")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)}")
    assert post(client, host=[memory("gpu000")]).status_code == 202
    refused = post(client, host=[memory("gpu000", T0 + dt.timedelta(minutes=1)), memory("gpu001")])
    assert refused.status_code == 403 and "gpu001" in refused.content.decode()
    row = HostReading.objects.get()
    assert row.node.hostname == "gpu000" and row.ts == T0


def test_the_ingest_costs_the_same_queries_for_ten_readings_or_a_thousand(
    ada, nodes, django_assert_max_num_queries
):
    def batch(n: int, at: dt.datetime, prefix: str) -> list[dict]:
        return [mount(f"gpu{i % 8:03d}", f"/{prefix}{i}", fstype="xfs") | {"ts": iso(at)}
                for i in range(n)]  # fmt: skip

    assert post(ada, host=[memory()]).status_code == 202  # the token's first use, once
    with django_assert_max_num_queries(20) as small:
        assert post(ada, host=batch(10, T0, "a")).status_code == 202
    with django_assert_max_num_queries(20) as large:
        assert post(ada, host=batch(1000, T0, "b")).status_code == 202
    assert len(large.captured_queries) == len(small.captured_queries)
    # All stored: nothing to make, one bulk update (a new subject's first reading is written
    # by its insert, with no update after it: no more statements than that).
    with django_assert_max_num_queries(20) as again:
        answer = post(ada, host=batch(1000, T0 + dt.timedelta(minutes=1), "b")).json()
    assert answer["host"] == 1000 and len(again.captured_queries) <= len(large.captured_queries)
    assert HostReading.objects.count() == 1011


@pytest.fixture
def browser(client, users):  # noqa: ANN001, ANN201
    client.force_login(users["mia"])
    return client


def test_the_host_card_shows_values_and_what_was_never_reported(ada, browser, nodes):
    html = browser.get("/nodes/gpu006/").content.decode()
    said = (
        "its memory controllers, mounts, PCIe devices, clock and kernel memory events "
        "are not monitored"
    )
    assert f"No host readings from this node: {said}" in html
    t1 = T0 + dt.timedelta(minutes=1)
    body = [
        memory("gpu006", T0, ce=10, ue=0), memory("gpu006", t1, ce=12, ue=1),
        mount("gpu006", "/checkpoints", readonly=1, avail_bytes=TIB // 2),
        mount("gpu006", "/scratch", fstype="xfs", device="/dev/nvme0n1"),
        host("gpu006", "pcie", "0000:17:00.0", role="gpu", link_width=8, max_link_width=16,
             link_speed_gts=32, max_link_speed_gts=32, aer_correctable_total=0,
             aer_nonfatal_total=0, aer_fatal_total=0),
    ]  # fmt: skip
    assert post(ada, host=body).status_code == 202
    html = browser.get("/nodes/gpu006/").content.decode()
    assert "No host readings" not in html
    assert "mc0" in html and "12 (+2)" in html
    assert '<span class="badge res-fail">1 (+1)</span>' in html  # an uncorrectable error grew
    assert "/checkpoints" in html and "nas:/ckpt" in html and "nfs4" in html
    # No mount is required of this cluster: each is shown, its state in plain words, no badge.
    assert "512.0 GiB of 4.0 TiB (12%)" in html and 'data-label="State">read-only<' in html
    assert "/dev/nvme0n1" in html and 'data-label="State">ok<' in html
    assert "required</span>" not in html
    assert (
        '<span class="badge res-warn">◐ x8 of x16</span>' in html and "32 GT/s of 32 GT/s" in html
    )
    for kind in HOST_KINDS.values():  # each kind the node never reported, said
        missing = f'<b>{kind.label}</b>: <span class="warn">not reported</span>'
        assert (missing in html) == (kind.slug in ("clock", "vmstat")), kind.slug
    assert "not monitored on this node, rather than passing" in html.lower()
    assert 'data-label="Free"' in html  # the rows stack on a phone, each value named
    assert "data-since=" in html  # each reading's age


def test_a_node_fed_by_node_exporter_says_it_cannot_report_pcie(ada, browser, nodes):
    reading = {**host("gpu007", "clock", "system", offset_s=0.7, synced=0),
               "source": "node_exporter"}  # fmt: skip
    assert post(ada, host=[reading]).status_code == 202
    html = browser.get("/nodes/gpu007/").content.decode()
    assert "+700 ms" in html and "✗ not synchronised" in html
    assert "node_exporter publishes no such series" in html  # PCIe, from this source


def test_the_node_api_returns_its_host_readings(ada, api, nodes):
    later = memory("gpu001", T0 + dt.timedelta(minutes=1), ce=4)
    assert post(ada, host=[memory("gpu001", T0, ce=1), later]).status_code == 202
    answer = api("mia").get("/api/v1/nodes/GPU001/host/")
    assert answer.status_code == 200, answer.content
    data = answer.json()
    assert data["node"] == "gpu001"
    assert data["not_reported"] == ["filesystem", "pcie", "clock", "vmstat"]
    (reading,) = data["readings"]
    assert reading["kind"] == "memory" and reading["subject"] == "mc0"
    assert reading["values"] == {"ce_total": 4, "ue_total": 0}
    assert reading["prev_values"] == {"ce_total": 1, "ue_total": 0}
    assert reading["source"] == "agent" and reading["prev_ts"] is not None
    assert api("mia").get("/api/v1/nodes/nobody/host/").status_code == 404
    assert api("ada").get("/api/v1/nodes/gpu001/host/").status_code == 403  # agents never read


def test_sizes_and_offsets_as_a_person_reads_them():
    assert byte_size(0) == "0 B" and byte_size(512) == "512 B" and byte_size(3 * 2**29) == "1.5 GiB"
    assert offset_text(-0.012) == "−12 ms" and offset_text(1.25) == "+1.25 s"
    assert offset_text(-7200) == "−2.0 h" and offset_text(0) == "+0 ms"


def _rows(html: str) -> dict[str, str]:
    """The Host card's mount rows by mount point: each row's HTML."""
    card = html[html.index('id="host-filesystem"') :]
    card = card[: card.index("</table>")]
    rows = card.split('<tr role="row">')[2:]  # past the heading's row
    return {row.split('<span class="mono">')[1].split("<")[0]: row for row in rows}


def test_the_mounts_show_the_clusters_required_mounts_first_each_with_its_state(
    ada, browser, cluster, nodes, django_assert_num_queries
):
    """Required mounts first, in the cluster's order, each marked "required", with its free
    space and its state by the storage check's rule: ok, read-only, device error, missing
    (not in the node's newest filesystem report, though read before); then the node's other
    mounts, shown only. The card costs the node page no query more."""
    cluster.required_mounts = ["/scratch", "/checkpoints", "/data", "/models", "/gone"]
    cluster.save(update_fields=["required_mounts"])
    t1 = T0 + dt.timedelta(minutes=1)
    body = [
        mount("gpu003", "/gone") | {"ts": iso(T0)},  # then no longer in the node's report
        mount("gpu003", "/checkpoints", readonly=1) | {"ts": iso(t1)},
        mount("gpu003", "/scratch", fstype="xfs", device="/dev/nvme0n1",
              avail_bytes=TIB // 4) | {"ts": iso(t1)},
        mount("gpu003", "/data", device_error=1) | {"ts": iso(t1)},
        mount("gpu003", "/", fstype="ext4", device="/dev/sda2", readonly=1) | {"ts": iso(t1)},
    ]  # fmt: skip
    assert post(ada, host=body).status_code == 202
    node = node_detail(hostname="gpu003")  # as the node page loads it: with its cluster
    assert node is not None
    with django_assert_num_queries(1):  # the readings; the required mounts cost none
        context = node_host(node=node, params={})
    assert context["required_mounts"] == cluster.required_mounts
    html = browser.get("/nodes/gpu003/").content.decode()
    rows = _rows(html)
    assert list(rows) == ["/scratch", "/checkpoints", "/data", "/models", "/gone", "/"]
    for point in ("/scratch", "/checkpoints", "/data", "/models", "/gone"):
        assert '<span class="badge zero">required</span>' in rows[point], point
    assert "required" not in rows["/"]
    assert 'data-label="State">✓ ok<' in rows["/scratch"]
    assert "256.0 GiB of 4.0 TiB (6%)" in rows["/scratch"]  # its free space
    assert '<span class="badge res-fail">✗ read-only</span>' in rows["/checkpoints"]
    assert '<span class="badge res-fail">✗ device error</span>' in rows["/data"]
    assert '<span class="badge res-fail">✗ missing</span>' in rows["/models"]  # never read
    assert 'data-label="Free">—<' in rows["/models"]
    assert '<span class="badge res-fail">✗ missing</span>' in rows["/gone"]  # dropped out
    assert "1.0 TiB of 4.0 TiB" in rows["/gone"]  # its last values, with their age
    assert 'data-label="State">read-only<' in rows["/"]  # shown, judged by no check
    # The storage check, reading the same rows, says the same of each required mount.
    (node,) = [n for n in filesystems(cluster) if n.node == "gpu003"]
    found = storage([node], required=cluster.required_mounts, limits=StorageLimits())
    verdicts = {f.details["mount"]: str(f.status) for f in found}
    assert verdicts == {"/scratch": "pass", "/checkpoints": "fail", "/data": "fail",
                        "/models": "fail", "/gone": "fail"}  # fmt: skip


def test_a_node_that_never_reported_its_mounts_names_the_required_ones(
    ada, browser, cluster, nodes
):
    cluster.required_mounts = ["/checkpoints", "/scratch"]
    cluster.save(update_fields=["required_mounts"])
    html = browser.get("/nodes/gpu004/").content.decode()  # no host reading at all
    assert "No host readings from this node" in html
    assert 'requires the mounts <span class="mono">/checkpoints, /scratch</span>' in html
    assert post(ada, host=[memory("gpu004")]).status_code == 202  # other kinds, no mounts
    html = browser.get("/nodes/gpu004/").content.decode()
    assert '<b>Mounts</b>: <span class="warn">not reported</span>' in html
    assert 'requires <span class="mono">/checkpoints, /scratch</span>: not checked' in html
    assert 'id="host-filesystem"' not in html and "✗ missing" not in html  # not judged


def test_a_mounts_state_is_one_rule():
    assert mount_state(None) is MountState.MISSING
    assert mount_state({"readonly": 1, "device_error": 1}) is MountState.READ_ONLY
    assert mount_state({"readonly": 0, "device_error": 1}) is MountState.DEVICE_ERROR
    assert mount_state({"readonly": 0, "device_error": 0}) is MountState.OK
    assert mount_state({}) is MountState.OK  # flags not reported: nothing to fail on
    assert mount_state({"readonly": float("nan")}) is MountState.OK
