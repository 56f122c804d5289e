"""A node's `addresses` (`POST nodes/`, docs/alertmanager.md, Placement): the IPs and FQDNs it is
also known by, validated, stored in one spelling, and never claimed by two nodes."""

from __future__ import annotations

import pytest

from apps.fleet.addresses import address_normalize, addresses_clean
from apps.fleet.models import Node

URL = "/api/v1/nodes/"


@pytest.mark.parametrize(
    "value,canonical",
    [
        ("10.0.3.17", "10.0.3.17"),
        ("FD00:0:0::17", "fd00::17"),
        ("GPU-A017.dc1.Example.com.", "gpu-a017.dc1.example.com"),
        ("gpu-a017", "gpu-a017"),
        ("10.0.3.300", None),
        ("-bad.example.com", None),
        ("bad_host.example.com", None),
        ("a" * 64 + ".example.com", None),
        ("", None),
        ("10.0.3.17:9100", None),
    ],
)
def test_address_normalize(value, canonical):
    assert address_normalize(value) == canonical


def test_addresses_clean_keeps_each_once_and_bounds_the_list():
    assert addresses_clean(["10.0.0.1", "10.0.0.1", "H.example.com"]) == [
        "10.0.0.1",
        "h.example.com",
    ]
    with pytest.raises(ValueError, match="at most 16"):
        addresses_clean([f"10.0.0.{i}" for i in range(17)])
    with pytest.raises(ValueError, match="must be a list"):
        addresses_clean("10.0.0.1")


@pytest.mark.django_db
def test_register_with_addresses_and_update_them(api, cluster):
    body = {
        "hostname": "gpu-a017",
        "cluster": "c1",
        "addresses": ["10.0.3.17", "GPU-A017.dc1.example.com"],
    }
    created = api("otto").post(URL, body, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["addresses"] == ["10.0.3.17", "gpu-a017.dc1.example.com"]
    again = api("otto").post(URL, {**body, "addresses": ["fd00::17"]}, format="json")
    assert again.status_code == 200 and again.json()["addresses"] == ["fd00::17"]
    assert Node.objects.get(hostname="gpu-a017").addresses == ["fd00::17"]
    assert api("mia").get("/api/v1/nodes/gpu-a017/").json()["addresses"] == ["fd00::17"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "addresses,message",
    [
        (["10.0.3.300"], "neither an IP address nor a DNS name"),
        ("10.0.3.17", "list"),
        ([17], "neither"),
        (["ok.example.com", "bad host"], "bad host"),
        ([f"10.0.0.{i}" for i in range(17)], "16"),
    ],
)
def test_bad_addresses_are_400_naming_the_field(api, cluster, addresses, message):
    response = api("otto").post(
        URL, {"hostname": "gpu-a017", "cluster": "c1", "addresses": addresses}, format="json"
    )
    assert response.status_code == 400 and message in str(response.json()["addresses"])
    assert not Node.objects.filter(hostname="gpu-a017").exists()


@pytest.mark.django_db
def test_an_address_belongs_to_one_node(api, cluster):
    first = {"hostname": "gpu-a017", "cluster": "c1", "addresses": ["10.0.3.17"]}
    assert api("otto").post(URL, first, format="json").status_code == 201
    second = {"hostname": "gpu-a018", "cluster": "c1", "addresses": ["10.0.3.18", "10.0.3.17"]}
    response = api("otto").post(URL, second, format="json")
    assert response.status_code == 400
    assert "10.0.3.17 is already gpu-a017's" in response.json()["addresses"][0]
    assert not Node.objects.filter(hostname="gpu-a018").exists()
