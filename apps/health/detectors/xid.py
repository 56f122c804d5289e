"""How the `gpu_errors` check reads an XID code, from NVIDIA's catalogue (`apps.telemetry.xids`):
its incident category, and whether its immediate action takes the GPU or node out of
service."""

from __future__ import annotations

from dataclasses import dataclass

from apps.incidents.choices import Category
from apps.telemetry.xids import xid_info


@dataclass(frozen=True)
class XidClass:
    """What the check needs of an XID code."""

    code: int
    known: bool
    mnemonic: str
    action: str
    out_of_service: bool
    category: Category


def classify_xid(code: int) -> XidClass:
    """The check's reading of `code`: out of service when NVIDIA's immediate action is a GPU
    reset, a reboot, a fabric recovery or support; otherwise (restart the application,
    nothing to do, look into it, or a code the catalogue does not know) a warning."""
    info = xid_info(code)
    if info is None:
        return XidClass(code, False, "", "", False, Category.GPU)
    return XidClass(
        code,
        True,
        info.description or info.mnemonic,
        info.action_label,
        info.takes_out_of_service,
        Category(info.category),
    )
