"""A required mount's state on a node, one rule for whoever judges or shows it: the `storage`
check (apps/health/detectors/storage.py) and the node page's Host card
(docs/checks.md, `storage`; docs/integrations.md, Host readings).

A node's agent sends only the mounts it finds, so a mount is *missing* when the node's newest
filesystem report does not hold it: its reading is older than the newest of the node's
filesystem readings, or it has none. A mount in that report is *read-only* or has a *device
error* when its flag is 1, else it is *ok* (its free space is judged apart). Pure: plain
values in, words out.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Mapping
from enum import StrEnum


class MountState(StrEnum):
    """A required mount's state, in the words the card and the check's messages use."""

    OK = "ok"
    READ_ONLY = "read-only"
    DEVICE_ERROR = "device error"
    MISSING = "missing"


def newest_report(times: Iterable[dt.datetime]) -> dt.datetime | None:
    """The time of a node's newest filesystem report: the newest of its mounts' readings
    (None when it never reported one)."""
    return max(times, default=None)


def in_newest_report(ts: dt.datetime | None, newest: dt.datetime | None) -> bool:
    """Whether a mount read at `ts` is in the node's newest report (read then or later)."""
    return ts is not None and newest is not None and ts >= newest


def _flag(values: Mapping[str, object], name: str) -> bool:
    value = values.get(name)
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value == 1
    )


def mount_state(values: Mapping[str, object] | None) -> MountState:
    """A mount's state from its values in the node's newest report (None: not in it).
    Read-only comes before a device error when both are flagged."""
    if values is None:
        return MountState.MISSING
    if _flag(values, "readonly"):
        return MountState.READ_ONLY
    if _flag(values, "device_error"):
        return MountState.DEVICE_ERROR
    return MountState.OK
