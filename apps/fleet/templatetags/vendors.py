"""Template filters that name the interconnect by its vendor's word: NVLink, XGMI, Gaudi
links, MTLink (docs/pages.md, The interconnect's name)."""

from __future__ import annotations

from django import template

from apps.fleet.vendors import gpu_name, link_word

register = template.Library()


@register.filter
def interconnect(text: str, vendor: str) -> str:
    """`text` with NVIDIA's word "NVLink" replaced by `vendor`'s ("NVLink CRC" → "XGMI CRC")."""
    return str(text).replace("NVLink", link_word(vendor or ""))


@register.filter
def link_name(vendor: str) -> str:
    """The vendor's word for its GPU-to-GPU links."""
    return link_word(vendor or "")


@register.filter
def named_gpu(model: str, vendor: str) -> str:
    """The GPU's name: `model` after its vendor's name, said once."""
    return gpu_name(vendor or "", str(model or ""))
