"""A cluster's required mounts (docs/checks.md, `storage`): the mount points every node of
it must have, writable and healthy, such as `/checkpoints`. Pure: no database."""

from __future__ import annotations

import re

MAX_MOUNTS = 32
MAX_LENGTH = 255
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def mounts_clean(value: object, *, field: str = "required_mounts") -> list[str]:
    """`value` as a cluster's required mounts: a list of at most `MAX_MOUNTS` absolute paths
    of at most `MAX_LENGTH` characters each, without a trailing `/` (`/checkpoints/` is
    `/checkpoints`, as a node reports it), none twice. ValueError naming the entry
    (`required_mounts[2]: …`) when it is not one."""
    if not isinstance(value, list):
        raise ValueError(f"{field}: must be a list of mount points such as /checkpoints")
    if len(value) > MAX_MOUNTS:
        raise ValueError(f"{field}: at most {MAX_MOUNTS} mount points")
    out: list[str] = []
    for i, raw in enumerate(value):
        where = f"{field}[{i}]"
        if not isinstance(raw, str) or not raw.startswith("/"):
            raise ValueError(f"{where}: must be an absolute path such as /checkpoints")
        if len(raw) > MAX_LENGTH:
            raise ValueError(f"{where}: must be at most {MAX_LENGTH} characters")
        if _CONTROL.search(raw):
            raise ValueError(f"{where}: must not contain control characters")
        point = raw.rstrip("/") or "/"
        if point in out:
            raise ValueError(f"{where}: {point} is listed twice")
        out.append(point)
    return out
