"""What a check's incidents say: a title naming the GPUs and NIC ports its findings blame,
cut to what the title holds (docs/checks.md, What a warning or failure does), and the
timeline's words for an XID storm (docs/checks.md, Storms). Pure: no database."""

from __future__ import annotations

from collections.abc import Sequence

from apps.health.detectors.findings import Finding, target_part
from apps.incidents.choices import TITLE_LENGTH


def fit_title(text: str) -> str:
    """`text` cut to what an incident's title holds, an ellipsis saying it was cut (a
    200-character job name and three long hostnames must not fail the run)."""
    return text if len(text) <= TITLE_LENGTH else text[: TITLE_LENGTH - 1] + "…"


def named_parts(items: Sequence[Finding], *, one_host: bool) -> str:
    """The GPUs and NIC ports findings point at, for an incident's title: "GPU 3",
    "port mlx5_5/1" (with their node where the incident has several), at most three, in
    the findings' order; '' where they point at nodes or jobs only."""
    named: list[str] = []
    for finding in items:
        found = target_part(finding.target)
        if found is None:
            continue
        part = found[1] if one_host else " ".join(found)
        if part not in named:
            named.append(part)
    return ", ".join(named[:3]) + (" …" if len(named) > 3 else "")


def part_words(target: str) -> str:
    """`gpu:h01/3` → `h01 GPU 3` (a GPU known only by its PCI address: `h01 GPU 0000:17:00`);
    a target naming no GPU or port as it is."""
    found = target_part(target)
    return " ".join(found) if found else target


def xid_seen(items: Sequence[Finding]) -> dict[str, dict[str, int]]:
    """Each GPU target's XID codes and how many lines of each this run's findings folded."""
    seen: dict[str, dict[str, int]] = {}
    for f in items:
        for code, n in (f.details.get("xid_counts") or {}).items():
            codes = seen.setdefault(f.target, {})
            codes[code] = codes.get(code, 0) + n
    return seen


def xid_pairs(seen: dict[str, dict[str, int]]) -> list[tuple[tuple[str, str], int]]:
    """((target, code), lines) of `xid_seen`, in order."""
    return sorted(((t, c), n) for t, codes in seen.items() for c, n in codes.items())


def times(n: int) -> str:
    """`once`, `3 times`."""
    return "once" if n == 1 else f"{n} times"
