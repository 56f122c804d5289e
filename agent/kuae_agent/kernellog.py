"""Following the node's kernel log for XIDs (docs/xid.md), each line sent once.

The NVIDIA driver writes every XID to the kernel log:

    NVRM: Xid (PCI:0000:17:00): 79, pid=1234, name=python, GPU has fallen off the bus.
    NVRM: Xid (PCI:0000:0f:00): 43, pid=1660871, name=python, Ch 0000000a
    NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.
    NVRM: Xid (0000:03:00): 14, Channel 00000001

dcgm-exporter's XID gauge only holds a GPU's last code; the log has every one. Three readers,
each with a position kept in a cursor file so that a restart neither repeats nor skips a
line: `journalctl -k -o json` (the journal's own cursor, `--after-cursor`), `/dev/kmsg` (boot
id and the kernel's record sequence number), or a plain file (`--kmsg-file`: inode, byte
offset, and the sequence number when its lines are kmsg records).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import os
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kuae_agent.mtdriver import KIND as MTHREADS_KIND
from kuae_agent.mtdriver import parse_mthreads
from kuae_agent.spool import Spool

log = logging.getLogger("kuae_agent")

UTC = dt.UTC

_XID = re.compile(
    r"NVRM: Xid \((?:PCI:)?(?P<bus>[0-9a-fA-F]{1,8}:[0-9a-fA-F]{1,2}:[0-9a-fA-F]{1,2}"
    r"(?:\.[0-7])?)\): (?P<code>\d+)(?:,\s*(?P<rest>.*))?"
)
# Line formats of a kernel log written to a file, each giving a time when it can.
_KMSG = re.compile(r"^(?P<prio>\d+),(?P<seq>\d+),(?P<usec>\d+),[^;]*;(?P<msg>.*)$")
_ISO = re.compile(
    r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d))\s+\S+\s+kernel:\s?"
    r"(?P<msg>.*)$"
)
_DMESG = re.compile(r"^\[\s*(?P<up>\d+\.\d+)\]\s?(?P<msg>.*)$")
_DMESG_T = re.compile(
    r"^\[(?P<ts>[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})\]\s?(?P<msg>.*)$"
)
_SYSLOG = re.compile(
    r"^(?P<ts>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d)\s+\S+\s+kernel:\s*(?:\[\s*\d+\.\d+\]\s*)?"
    r"(?P<msg>.*)$"
)
MAX_MESSAGE = 1000


@dataclass(frozen=True)
class Xid:
    """One `NVRM: Xid` line: when, which GPU (PCI address as the kernel wrote it), the code,
    and the rest of the line (pid, process name, channel, the driver's words)."""

    ts: dt.datetime
    pci_bus: str
    code: int
    message: str

    def as_event(self, node: str) -> dict[str, Any]:
        """The `ingest/events/` item for this line."""
        return {
            "node": node,
            "ts": self.ts.isoformat().replace("+00:00", "Z"),
            "kind": "xid",
            "code": self.code,
            "pci_bus": self.pci_bus,
            "message": self.message,
        }


def parse_xid(message: str) -> tuple[str, int, str] | None:
    """(PCI address, code, rest of the line) of an `NVRM: Xid` message, else None."""
    match = _XID.search(message)
    if match is None:
        return None
    return match["bus"], int(match["code"]), (match["rest"] or "").strip()[:MAX_MESSAGE]


def boot_time() -> float:
    """Wall-clock time of boot, for the kernel's since-boot timestamps."""
    return time.time() - time.clock_gettime(time.CLOCK_MONOTONIC)


def boot_id() -> str:
    """This boot's id (the kernel's sequence numbers restart with it)."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


@dataclass(frozen=True)
class Record:
    """A kernel-log line: its message, its time when the format gives one, its kmsg sequence,
    its syslog level (0 emergency … 7 debug) when the format gives one."""

    message: str
    ts: dt.datetime | None = None
    seq: int | None = None
    level: int | None = None


def parse_record(line: str, *, booted: float, now: dt.datetime) -> Record:
    """One line of a kernel log in any of the formats it is found in on disk: kmsg records
    (`6,1234,5678901,-;msg`), `journalctl -o short-iso`, `dmesg` and `dmesg -T`, syslog's
    kern.log; anything else is the message itself, without a time."""
    if match := _KMSG.match(line):
        at = dt.datetime.fromtimestamp(booted + int(match["usec"]) / 1e6, tz=UTC)
        level = int(match["prio"]) & 7  # facility × 8 + level
        return Record(match["msg"], min(at, now), int(match["seq"]), level)
    if match := _ISO.match(line):
        text = match["ts"].replace(",", ".").replace("Z", "+00:00")
        try:
            return Record(match["msg"], dt.datetime.fromisoformat(text).astimezone(UTC))
        except ValueError:
            return Record(match["msg"])
    if match := _DMESG.match(line):
        at = dt.datetime.fromtimestamp(booted + float(match["up"]), tz=UTC)
        return Record(match["msg"], min(at, now))
    for pattern, fmt in ((_DMESG_T, "%a %b %d %H:%M:%S %Y"), (_SYSLOG, "%b %d %H:%M:%S")):
        if match := pattern.match(line):
            try:
                local = dt.datetime.strptime(" ".join(match["ts"].split()), fmt)
            except ValueError:
                return Record(match["msg"])
            if "%Y" not in fmt:  # syslog leaves the year out: this year, unless that is ahead
                local = local.replace(year=now.year)
            at = local.astimezone(UTC)  # a naive time is the node's local time
            if at > now + dt.timedelta(days=1):
                at = at.replace(year=at.year - 1)
            return Record(match["msg"], at)
    return Record(line)


Position = dict[str, Any]

# --- the three readers ---------------------------------------------------------------
# Each `read(position)` yields (record, position after it) for every new line; a position is
# a small JSON-able dict, None before the first read.


class FileLog:
    """A file a kernel log is written to (or a test's file): read from a byte offset. When
    the file is replaced or truncated it is read from its start again, skipping kmsg records
    already seen in this boot."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self, position: Position | None) -> Iterator[tuple[Record, Position]]:
        """New complete lines since `position`."""
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return
        position = position or {}
        offset, seq = position.get("offset", 0), position.get("seq")
        this_boot = boot_id()
        same_boot = position.get("boot_id") == this_boot
        if position.get("inode") != stat.st_ino or stat.st_size < offset:
            offset = 0  # rotated or truncated: a new file
        booted, now = boot_time(), dt.datetime.now(UTC)
        with self.path.open("rb") as handle:
            handle.seek(offset)
            for raw in handle:
                if not raw.endswith(b"\n"):
                    break  # a line still being written: next time
                offset += len(raw)
                line = raw.decode("utf-8", "replace").rstrip("\n")
                record = parse_record(line, booted=booted, now=now)
                if record.seq is not None:
                    if same_boot and seq is not None and record.seq <= seq:
                        record = Record("")  # seen before the file was replaced
                    else:
                        seq = record.seq
                after = {
                    "kind": "file",
                    "inode": stat.st_ino,
                    "offset": offset,
                    "seq": seq,
                    "boot_id": this_boot,
                }
                yield record, after


class KmsgDevice:
    """`/dev/kmsg`: one record per read; the kernel's sequence number (per boot) is the
    position. Opened once and kept open, so each poll reads only what is new."""

    def __init__(self, path: Path = Path("/dev/kmsg")) -> None:
        self.path = path
        self.fd: int | None = None

    def read(self, position: Position | None) -> Iterator[tuple[Record, Position]]:
        """Records after `position` (all of this boot's buffer on a new boot)."""
        this_boot = boot_id()
        last = (position or {}).get("seq") if (position or {}).get("boot_id") == this_boot else None
        if self.fd is None:
            self.fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        booted, now = boot_time(), dt.datetime.now(UTC)
        while True:
            try:
                raw = os.read(self.fd, 8192)
            except BlockingIOError:
                return  # nothing more for now
            except BrokenPipeError:
                log.warning("kernel log records were overwritten before they were read")
                continue
            if not raw:
                return
            line = raw.decode("utf-8", "replace").split("\n", 1)[0]  # dictionary lines after
            record = parse_record(line, booted=booted, now=now)
            if record.seq is None or (last is not None and record.seq <= last):
                continue
            last = record.seq
            yield record, {"kind": "kmsg", "boot_id": this_boot, "seq": record.seq}

    def close(self) -> None:
        """Close the device."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class Journal:
    """`journalctl -k -o json`: the journal's cursor is the position (`--after-cursor`)."""

    def __init__(self, binary: str = "journalctl", backfill_s: float = 3600) -> None:
        self.binary = binary
        self.backfill_s = backfill_s

    def read(self, position: Position | None) -> Iterator[tuple[Record, Position]]:
        """Kernel messages after the cursor; on a first start, this boot's last hour. A cursor
        the journal no longer has (vacuumed, rotated away) falls back to the time of the
        entry it named: at worst that entry again, which the server stores once anyway."""
        base = [self.binary, "-k", "-o", "json", "--no-pager"]
        since = time.time() - min(self.backfill_s, 1e9)
        out = None
        if position and position.get("cursor"):
            out = self._run([*base, f"--after-cursor={position['cursor']}"])
            since = float(position.get("ts") or since)
        if out is None:
            out = self._run([*base, "-b", f"--since=@{int(since)}"])
        for line in out or []:
            try:
                entry = json.loads(line)
                cursor = entry["__CURSOR"]
            except (ValueError, KeyError, TypeError):
                continue
            message = entry.get("MESSAGE", "")
            if isinstance(message, list):  # the journal's form of a message that is not UTF-8
                message = bytes(message).decode("utf-8", "replace")
            try:
                at = dt.datetime.fromtimestamp(int(entry["__REALTIME_TIMESTAMP"]) / 1e6, tz=UTC)
            except (KeyError, ValueError, TypeError):
                at = None
            after = {"kind": "journal", "cursor": cursor, "ts": at.timestamp() if at else None}
            level = str(entry.get("PRIORITY", ""))
            yield Record(str(message), at, level=int(level) if level.isdigit() else None), after

    def _run(self, command: list[str]) -> list[bytes] | None:
        try:
            done = subprocess.run(command, capture_output=True, timeout=60, check=True)
        except (OSError, subprocess.SubprocessError) as exc:
            log.error("could not read the journal (%s): %s", " ".join(command[1:]), exc)
            return None
        return done.stdout.splitlines()


# --- following: read, spool, remember --------------------------------------------------

EVENTS_PATH = "/api/v1/ingest/events/"
CHUNK = 1000  # events per request (the server takes up to 10,000)
META_KEY = "kernel_log_position"


class XidFollower:
    """Reads what is new in the kernel log, writes its XIDs to the spool (fsync'd, delivered
    oldest first), and keeps the position in `cursor_file`.

    Never twice after a restart: every spooled request carries the position after its last
    line and a serial number, and the cursor file is written after the spool. On start the
    newest of the two wins, so a crash between spooling and saving the cursor does not read
    those lines again (delivery runs after `poll`, so a request is never delivered before its
    position is saved). On a first start (no position) lines older than `backfill_s` seconds
    are skipped when their time is known: an old XID from before the agent ran is history,
    not news.

    With `mthreads`, Moore Threads driver lines are sent too (kuae_agent/mtdriver.py), in
    requests of their own: a server that does not know their kind refuses only those.
    """

    def __init__(
        self,
        reader: FileLog | KmsgDevice | Journal,
        *,
        node: str,
        spool: Spool,
        cursor_file: Path,
        backfill_s: float = 3600,
        mthreads: bool = False,
    ) -> None:
        self.reader = reader
        self.mthreads = mthreads
        self.node = node
        self.spool = spool
        self.cursor_file = cursor_file
        self.backfill_s = backfill_s
        self.serial, self.position = self._load()

    def _load(self) -> tuple[int, Position | None]:
        best: tuple[int, Position | None] = (0, None)
        try:
            raw = json.loads(self.cursor_file.read_text())
            best = (int(raw["serial"]), raw["position"])
        except FileNotFoundError:
            pass
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.error(
                "kernel log cursor %s unreadable (%s): starting afresh", self.cursor_file, exc
            )
        for item in self.spool.pending():
            mark = item.meta.get(META_KEY)
            if isinstance(mark, dict) and int(mark.get("serial", 0)) > best[0]:
                best = (int(mark["serial"]), mark.get("position"))
        return best

    def poll(self, now: dt.datetime | None = None) -> int:
        """Read the new lines, spool their XIDs (and Moore Threads driver lines), keep the
        position; the events spooled."""
        now = now or dt.datetime.now(UTC)
        since = None
        if self.position is None and math.isfinite(self.backfill_s):
            since = now - dt.timedelta(seconds=self.backfill_s)
        batch: list[dict[str, Any]] = []
        vendor: list[dict[str, Any]] = []  # Moore Threads driver lines
        spooled = 0
        position = self.position
        try:
            for record, position in self.reader.read(self.position):
                if since and record.ts and record.ts < since:
                    continue
                parsed = parse_xid(record.message)
                if parsed is not None:
                    batch.append(Xid(record.ts or now, *parsed).as_event(self.node))
                elif self.mthreads and (line := parse_mthreads(record.message, record.level)):
                    vendor.append(self._vendor_event(record.ts or now, *line))
                if len(batch) + len(vendor) >= CHUNK:
                    spooled += self._spool(batch, position) + self._spool(vendor, position)
                    batch, vendor = [], []
        except OSError as exc:
            log.error("could not read the kernel log: %s", exc)
        spooled += self._spool(batch, position) + self._spool(vendor, position)
        if position != self.position:
            self._save(position)
        if spooled:
            log.info("kernel log: %d XID or driver line(s) spooled", spooled)
        return spooled

    def _vendor_event(self, ts: dt.datetime, bus: str, line: str) -> dict[str, Any]:
        event = {
            "node": self.node,
            "ts": ts.isoformat().replace("+00:00", "Z"),
            "kind": MTHREADS_KIND,
            "message": line[:MAX_MESSAGE],
        }
        if bus:
            event["pci_bus"] = bus
        return event

    def _spool(self, events: list[dict[str, Any]], position: Position | None) -> int:
        if not events:
            return 0
        self.serial += 1
        self.spool.put(
            EVENTS_PATH,
            json.dumps({"events": events}),
            "application/json",
            meta={META_KEY: {"serial": self.serial, "position": position}},
        )
        return len(events)

    def _save(self, position: Position | None) -> None:
        self.serial += 1
        tmp = self.cursor_file.with_name(f".{self.cursor_file.name}.tmp")
        with tmp.open("w") as handle:
            json.dump({"serial": self.serial, "position": position}, handle)
            handle.flush()
            os.fsync(handle.fileno())
        tmp.replace(self.cursor_file)
        self.position = position
