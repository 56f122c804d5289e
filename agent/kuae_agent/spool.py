"""A disk buffer of requests still to deliver: written before sending, deleted once stored."""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("kuae_agent")


@dataclass(frozen=True)
class Item:
    """One request to deliver: where, what, the file that holds it, and what its writer noted
    alongside (e.g. the kernel-log position it reaches; never sent)."""

    path: str
    content_type: str
    body: str
    file: Path
    meta: dict[str, Any] = field(default_factory=dict)


class Spool:
    """Files under `root`, delivered oldest first; `rejected/` keeps what the server refused."""

    def __init__(self, root: Path, max_bytes: int = 512 * 1024 * 1024) -> None:
        self.root = root
        self.rejected = root / "rejected"
        self.max_bytes = max_bytes
        self.rejected.mkdir(parents=True, exist_ok=True)
        self._seq = 0
        self.dropped = 0  # requests trimmed to stay under max_bytes
        self.dropped_samples = 0  # what those requests' `samples` meta counted

    def put(
        self, path: str, body: str, content_type: str, meta: dict[str, Any] | None = None
    ) -> Path:
        """Write a request to disk atomically (fsync'd) and return its file."""
        self._seq += 1
        name = f"{time.time_ns():020d}-{os.getpid()}-{self._seq:06d}.json"
        tmp = self.root / f".{name}.tmp"
        with tmp.open("w") as handle:
            record = {"path": path, "content_type": content_type, "body": body}
            json.dump({**record, "meta": meta} if meta else record, handle)
            handle.flush()
            os.fsync(handle.fileno())
        final = self.root / name
        tmp.replace(final)
        self._trim()
        return final

    def pending(self) -> list[Item]:
        """Requests not yet delivered, oldest first (unreadable files are set aside)."""
        items = []
        for file in sorted(self.root.glob("*.json")):
            try:
                raw = json.loads(file.read_text())
                meta = raw.get("meta") or {}
                items.append(Item(raw["path"], raw["content_type"], raw["body"], file, meta))
            except (OSError, ValueError, KeyError):
                self.reject(file, "unreadable spool file")
        return items

    def done(self, item: Item) -> None:
        """The server stored it: forget it."""
        item.file.unlink(missing_ok=True)

    def reject(self, file: Path, reason: str) -> None:
        """The server refused it (4xx): keep it aside for a person, never retry it."""
        target = self.rejected / file.name
        file.replace(target)
        target.with_suffix(".reason").write_text(reason[:2000])
        log.error("set aside %s: %s", file.name, reason[:300])

    def _trim(self) -> None:
        files = sorted(self.root.glob("*.json"))
        size = sum(f.stat().st_size for f in files)
        while files and size > self.max_bytes:
            oldest = files.pop(0)
            size -= oldest.stat().st_size
            self.dropped += 1
            self.dropped_samples += _samples_in(oldest)
            oldest.unlink(missing_ok=True)
            log.warning(
                "spool over %d bytes: dropped the oldest request %s", self.max_bytes, oldest.name
            )


def _samples_in(file: Path) -> int:
    """The `samples` count its writer noted in a spooled request's meta (0 if none)."""
    try:
        meta = json.loads(file.read_text()).get("meta") or {}
        return int(meta.get("samples", 0))
    except (OSError, ValueError, TypeError, AttributeError):
        return 0
