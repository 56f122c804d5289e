"""NVIDIA's XID catalogue for Ampere and newer GPUs (docs/xid.md): what each code means and
what NVIDIA says to do about it right away. Pure: no Django; the data is
`apps/telemetry/data/xid_catalog.csv` (its provenance is in that file and the README beside it),
read once per process.
"""

from __future__ import annotations

import csv
import functools
import re
from dataclasses import dataclass
from pathlib import Path

from django.utils.translation import gettext_noop

CATALOG_PATH = Path(__file__).with_name("data") / "xid_catalog.csv"

# NVIDIA's immediate-action buckets whose action needs the GPU or the node out of service:
# a GPU reset, a node (or VM) reboot, an NVLink/fabric recovery workflow, a person at the
# machine, new firmware, or support / RMA (docs/checks.md, `gpu_errors`).
OUT_OF_SERVICE = frozenset(
    {
        "RESET_GPU",
        "RESTART_BM",
        "RESTART_VM",
        "CONTACT_SUPPORT",
        "WORKFLOW_XID_48",  # double-bit ECC: "a GPU reset or node reboot is needed"
        "WORKFLOW_NVLINK_ERR",  # XID 74: "a GPU reset or node reboot is needed"
        "WORKFLOW_NVLINK5_ERR",  # XIDs 144-150: fatal sub-codes reset the GPU
        "CHECK_MECHANICALS",  # auxiliary power not connected: hands on the machine
        "UPDATE_SWFW",
        # From an XID 154's message (`xid154_action`):
        "DRAIN_P2P",
        "DRAIN_AND_RESET",
    }
)
# Buckets that leave the GPU in service: restart the application, or nothing to do. XID 45 is
# the cleanup after an application ended (Ctrl-C, a kill, or another XID, which is judged on
# its own), so on its own it is application-level.
APPLICATION_LEVEL = frozenset({"RESTART_APP", "IGNORE", "WORKFLOW_XID_45"})
# Everything else (CHECK_UVM, XID_154 without its message, no bucket at all) is neither: the
# catalogue asks a person to look.

# In English (stored in check results' messages); a page translates them with gettext.
ACTION_LABELS = {
    "RESTART_APP": gettext_noop("Restart the application"),
    "IGNORE": gettext_noop("No action needed"),
    "RESET_GPU": gettext_noop("Reset the GPU"),
    "RESTART_BM": gettext_noop("Reboot the node"),
    "RESTART_VM": gettext_noop("Restart the virtual machine"),
    "CONTACT_SUPPORT": gettext_noop("Contact NVIDIA or the hardware vendor"),
    "WORKFLOW_XID_48": gettext_noop("Reset the GPU or reboot the node (double-bit ECC workflow)"),
    "WORKFLOW_XID_45": gettext_noop("Follow the XID that caused it, if any"),
    "WORKFLOW_NVLINK_ERR": gettext_noop("Reset the GPU or reboot the node (NVLink workflow)"),
    "WORKFLOW_NVLINK5_ERR": gettext_noop(
        "Decode the NVLink sub-code; a fatal one needs a GPU reset"
    ),
    "CHECK_MECHANICALS": gettext_noop("Check the GPU's power cabling and seating"),
    "UPDATE_SWFW": gettext_noop("Update the driver and firmware"),
    "CHECK_UVM": gettext_noop("Check the unified-memory (UVM) driver"),
    "XID_154": gettext_noop("Do what the message says (GPU reset or node reboot)"),
    "DRAIN_P2P": gettext_noop("Drain peer-to-peer traffic"),
    "DRAIN_AND_RESET": gettext_noop("Drain peer-to-peer traffic, then reset the GPU"),
    "": gettext_noop("None given in NVIDIA's catalogue"),
}

KIND_LABELS = {
    "memory": "GPU memory",
    "nvlink": "NVLink / fabric",
    "bus": "PCIe bus",
    "gsp": "GSP / firmware",
    "application": "Application",
    "other": "Other",
}

# Incident category by kind (docs/checks.md, `gpu_errors`); anything else is `gpu`.
_CATEGORY = {"memory": "gpu_hbm", "gsp": "gpu_system_processor"}


@dataclass(frozen=True, slots=True)
class XidInfo:
    """One catalogue entry; `action` is NVIDIA's immediate-action bucket ('' when blank)."""

    code: int
    mnemonic: str
    description: str
    action: str
    investigatory_action: str
    kind: str
    takes_out_of_service: bool
    application_level: bool

    @property
    def action_label(self) -> str:
        """The immediate action in words."""
        return ACTION_LABELS.get(self.action, self.action)

    @property
    def kind_label(self) -> str:
        """The kind in words."""
        return KIND_LABELS[self.kind]

    @property
    def category(self) -> str:
        """The incident category slug an out-of-service XID of this kind opens."""
        return _CATEGORY.get(self.kind, "gpu")


@functools.lru_cache(maxsize=1)
def xid_catalogue() -> dict[int, XidInfo]:
    """Every code in the catalogue, read from the data file once per process."""
    with CATALOG_PATH.open(newline="", encoding="utf-8") as handle:
        rows = csv.DictReader(line for line in handle if not line.startswith("#"))
        out = {}
        for row in rows:
            action = row["immediate_action"].strip()
            info = XidInfo(
                code=int(row["code"]),
                mnemonic=row["mnemonic"],
                description=row["description"],
                action=action,
                investigatory_action=row["investigatory_action"],
                kind=row["kind"],
                takes_out_of_service=action in OUT_OF_SERVICE,
                application_level=action in APPLICATION_LEVEL,
            )
            out[info.code] = info
    return out


def xid_info(code: int) -> XidInfo | None:
    """The catalogue entry for `code`, or None when NVIDIA's catalogue does not know it."""
    return xid_catalogue().get(code)


def xid_category(code: int) -> str:
    """The incident category for an XID: memory → `gpu_hbm`, GSP/firmware →
    `gpu_system_processor`; NVLink/fabric, fallen off the bus, unknown codes and the rest →
    `gpu`."""
    info = xid_info(code)
    return info.category if info is not None else "gpu"


# NVML's GPU recovery actions, as an XID 154 names them ("… from 0x0 (None) to 0x2 (Node
# Reboot Required)").
_RECOVERY_ACTIONS = {
    0: "IGNORE",
    1: "RESET_GPU",
    2: "RESTART_BM",
    3: "DRAIN_P2P",
    4: "DRAIN_AND_RESET",
}
_XID154 = re.compile(r"recovery action changed from 0x[0-9a-f]+ \([^)]*\) to 0x([0-9a-f]+)", re.I)


def xid154_action(message: str) -> str | None:
    """The action an XID 154 message asks for, as a bucket (`RESET_GPU`, `RESTART_BM`,
    `DRAIN_P2P`, `DRAIN_AND_RESET`, or `IGNORE` for none); None when the message does not say."""
    match = _XID154.search(message or "")
    if match is None:
        return None
    return _RECOVERY_ACTIONS.get(int(match.group(1), 16))


def action_takes_out_of_service(action: str) -> bool:
    """Whether an immediate-action bucket needs the GPU or node out of service."""
    return action in OUT_OF_SERVICE
