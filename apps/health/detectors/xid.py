"""How the `gpu_errors` check reads an XID code: its category, and whether its immediate
action takes the GPU or node out of service."""

from __future__ import annotations

from dataclasses import dataclass

from apps.incidents.choices import Category

# Until the catalogue lands: the codes the check knew before.
_MEMORY = frozenset({48, 63, 64, 92, 94, 95})
_BUS = {74: "NVLink error", 79: "GPU has fallen off the bus"}
_APP = frozenset({13, 31, 43})


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
    """The check's reading of `code`."""
    if code in _MEMORY:
        return XidClass(code, True, "memory error", "reset the GPU", True, Category.GPU_HBM)
    if code in _BUS:
        return XidClass(code, True, _BUS[code], "drain the node", True, Category.GPU)
    if code in _APP:
        return XidClass(
            code, True, "application error", "restart the application", False, Category.GPU
        )
    return XidClass(code, False, "", "", False, Category.GPU)
