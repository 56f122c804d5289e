"""Pure parts of the Alertmanager intake: category from labels and name
(docs/alertmanager.md, Category and severity), the XID mapping, and the names a node label may stand
for."""

from __future__ import annotations

import pytest

from apps.incidents.alertmanager import host_names
from apps.incidents.categories import alert_category, name_words, xid_category
from apps.incidents.choices import Category


@pytest.mark.parametrize(
    "code,category",
    [
        (48, "gpu_hbm"),
        (63, "gpu_hbm"),
        (64, "gpu_hbm"),
        (92, "gpu_hbm"),
        (94, "gpu_hbm"),
        (95, "gpu_hbm"),
        (119, "gpu_system_processor"),
        (120, "gpu_system_processor"),
        (79, "gpu"),
        (31, "gpu"),
        (13, "gpu"),
    ],
)
def test_xid_category(code, category):
    assert xid_category(code) == category


@pytest.mark.parametrize("slug", [c for c in Category.values if c != "other"])
def test_an_alert_named_after_a_category_gets_it(slug):
    assert alert_category({"alertname": slug}, {}) == slug
    camel = "".join(part.capitalize() for part in slug.split("_"))
    assert alert_category({"alertname": camel + "Alert"}, {}) == slug


@pytest.mark.parametrize(
    "labels,annotations,category",
    [
        ({"alertname": "X", "category": "nic"}, {}, "nic"),
        ({"alertname": "GpuThermal", "category": "bogus"}, {}, "gpu_thermal"),
        ({"alertname": "DCGM_FI_DEV_XID_ERRORS", "xid": "95"}, {}, "gpu_hbm"),
        ({"alertname": "DCGM_FI_DEV_XID_ERRORS", "err_code": "120"}, {}, "gpu_system_processor"),
        ({"alertname": "GpuXidError"}, {"summary": "XID 63 on gpu-a017 GPU 3"}, "gpu_hbm"),
        ({"alertname": "GpuXidError"}, {"description": "Xid: 79, fell off"}, "gpu"),
        ({"alertname": "GpuXidError"}, {}, "gpu"),
        ({"alertname": "Whatever", "xid": "119"}, {}, "gpu_system_processor"),
        ({"alertname": "NodeDown"}, {}, "node_unreachable"),
        ({"alertname": "TargetDown"}, {}, "node_unreachable"),
        ({"alertname": "NcclTimeout"}, {}, "nccl_timeout"),
        ({"alertname": "GPUMemoryErrors"}, {}, "gpu_hbm"),
        ({"alertname": "HostOomKills"}, {}, "host_memory"),
        ({"alertname": "InfinibandPortDown"}, {}, "nic"),
        ({"alertname": "DiskFull"}, {}, "storage"),
        ({"alertname": "KubePodCrashLooping"}, {}, "other"),
        ({}, {}, "other"),
    ],
)
def test_alert_category(labels, annotations, category):
    assert alert_category(labels, annotations) == category


def test_name_words_split_camel_case_acronyms_and_underscores():
    assert name_words("GPUXidErrors") == {"gpu", "xid", "error"}
    assert name_words("DCGM_FI_DEV_XID_ERRORS") == {"dcgm", "fi", "dev", "xid", "error"}
    assert name_words("ChassisFans") == {"chassis", "fan"}


@pytest.mark.parametrize(
    "value,names",
    [
        ("gpu-a017", ["gpu-a017"]),
        ("gpu-a017:9400", ["gpu-a017:9400", "gpu-a017"]),
        (
            "GPU-A017.dc1.Example.com.",
            ["GPU-A017.dc1.Example.com.", "gpu-a017.dc1.example.com", "gpu-a017"],
        ),
        ("h.example.com:9100", ["h.example.com:9100", "h.example.com", "h"]),
        ("10.0.3.17:9100", ["10.0.3.17:9100", "10.0.3.17"]),
        ("10.0.3.17", ["10.0.3.17"]),
        ("[fd00::17]:9100", ["[fd00::17]:9100", "fd00::17"]),
        ("fd00:0:0::17", ["fd00:0:0::17", "fd00::17"]),
    ],
)
def test_host_names(value, names):
    assert host_names(value) == names
