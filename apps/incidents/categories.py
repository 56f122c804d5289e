"""Which incident category (docs/incidents.md, Categories) an Alertmanager alert belongs to, from
its labels and name. Pure: plain strings in, a category slug out."""

from __future__ import annotations

import re
from collections.abc import Mapping

from apps.incidents.choices import Category
from apps.telemetry import xids


def xid_category(code: int) -> str:
    """The incident category of an NVIDIA XID code, from NVIDIA's catalogue (docs/xid.md;
    `apps.telemetry.xids`): memory (48, 63, 64, 92, 94, 95 …) → `gpu_hbm`, GSP (119, 120) →
    `gpu_system_processor`, anything else → `gpu`. The one place alerts classify an XID."""
    return xids.xid_category(code)


# Alert-name words → category, most specific first; a rule fires when all words of one of
# its sets are among the name's words (plurals folded: "Errors" → "error").
_NAME_RULES: tuple[tuple[str, tuple[frozenset[str], ...]], ...] = tuple(
    (category, tuple(frozenset(words.split()) for words in sets))
    for category, sets in (
        (Category.SILENT_DATA_CORRUPTION, ("sdc", "silent data corruption", "corruption")),
        (Category.NCCL_TIMEOUT, ("nccl",)),
        (Category.GPU_THERMAL, ("thermal", "temperature", "temp", "overheat", "overheating")),
        (Category.GPU_HBM, ("hbm", "ecc", "dbe", "remap", "gpu memory")),
        (Category.GPU_SRAM, ("sram",)),
        (Category.GPU_SYSTEM_PROCESSOR, ("gsp", "system processor")),
        (
            Category.NODE_UNREACHABLE,
            ("unreachable", "node down", "host down", "instance down", "target down"),
        ),
        (Category.HANG, ("hang", "hung", "stuck", "stall", "stalled")),
        (Category.SLOW_NODE, ("slow", "straggler")),
        (Category.NIC, ("nic", "infiniband", "ib", "rdma", "hca", "mlx")),
        (
            Category.NETWORK_SWITCH_CABLE,
            ("switch", "cable", "link down", "link flap", "link flapping", "port down"),
        ),
        (Category.DRIVER, ("driver",)),
        (Category.STORAGE, ("storage", "disk", "filesystem", "nfs", "lustre", "gpfs", "inode")),
        (Category.POWER_SUPPLY, ("power supply", "psu", "pdu", "power loss", "power failure")),
        (Category.HOST_MEMORY, ("oom", "dimm", "memory")),
        (Category.CPU, ("cpu",)),
        (Category.CHASSIS, ("chassis", "fan", "bmc", "ipmi")),
        (Category.IO_EXPANSION_BOARD, ("io expansion",)),
        (Category.HOST_MAINTENANCE, ("maintenance",)),
        (Category.DEPENDENCY, ("dependency",)),
        (Category.SOFTWARE_BUG, ("software bug",)),
        (Category.GPU, ("gpu", "xid", "fallen off bus")),
    )
)
_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_XID_IN_TEXT = re.compile(r"\bxid\W{0,3}(\d{1,4})\b", re.IGNORECASE)
XID_LABELS = ("xid", "err_code")


def name_words(name: str) -> set[str]:
    """`GPUXidErrors` → {gpu, xid, error}; `DCGM_FI_DEV_XID_ERRORS` → {dcgm, fi, dev, xid,
    error}: camel case and underscores split, lower case, plurals folded."""
    words = set()
    for word in _WORDS.findall(name):
        word = word.lower()
        plural = len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "is", "us"))
        words.add(word[:-1] if plural else word)
    return words


def xid_code(labels: Mapping[str, str], annotations: Mapping[str, str]) -> int | None:
    """The XID an alert reports: label `xid` (or dcgm-exporter's `err_code`), else
    "XID 79" in its summary or description; None when it names none."""
    for key in XID_LABELS:
        value = str(labels.get(key, "")).strip()
        if value.isdigit():
            return int(value)
    for key in ("summary", "description"):
        found = _XID_IN_TEXT.search(str(annotations.get(key, "")))
        if found:
            return int(found.group(1))
    return None


def alert_category(labels: Mapping[str, str], annotations: Mapping[str, str]) -> str:
    """docs/alertmanager.md, Category and severity: label `category` when it is a known slug; else
    an XID alert by its code; else a category the alert's name names (its slug or its obvious
    words); else `other`."""
    label = str(labels.get("category", ""))
    if label in Category.values:
        return label
    words = name_words(str(labels.get("alertname", "")))
    if "xid" in words or "xid" in labels:
        code = xid_code(labels, annotations)
        return xid_category(code) if code is not None else Category.GPU
    for category, sets in _NAME_RULES:
        if any(words_set <= words for words_set in sets):
            return category
    return Category.OTHER
