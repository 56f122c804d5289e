"""The agent's kernel-log follower: real `NVRM: Xid` lines parsed, every line sent once —
across a growing file, a restart in the middle, a crash between spooling and saving the
position, a replaced kmsg dump, the journal's cursor and the real /dev/kmsg."""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
from pathlib import Path

import pytest

from kuae_agent.cli import kernel_log, parser
from kuae_agent.kernellog import (
    EVENTS_PATH,
    FileLog,
    Journal,
    KmsgDevice,
    XidFollower,
    parse_record,
    parse_xid,
)
from kuae_agent.spool import Spool

UTC = dt.UTC


@pytest.mark.parametrize(
    ("line", "bus", "code", "rest"),
    [
        (
            "NVRM: Xid (PCI:0000:17:00): 79, pid=2417, name=python3, GPU has fallen off the bus.",
            "0000:17:00",
            79,
            "pid=2417, name=python3, GPU has fallen off the bus.",
        ),
        (
            "[660094.073526] NVRM: Xid (PCI:0000:0f:00): 43, pid=1660871, name=python, Ch 0000000a",
            "0000:0f:00",
            43,
            "pid=1660871, name=python, Ch 0000000a",
        ),
        (
            "NVRM: Xid (PCI:0000:05:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off "
            "the bus.",
            "0000:05:00",
            79,
            "pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
        ),
        (
            "NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.",
            "0000:01:00",
            79,
            "GPU has fallen off the bus.",
        ),
        ("NVRM: Xid (0000:03:00): 14, Channel 00000001", "0000:03:00", 14, "Channel 00000001"),
        (
            "NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s of "
            "waiting for RPC response from GPU4 GSP! Expected function 103 (GSP_RM_ALLOC)",
            "0000:9b:00",
            119,
            "pid=2024380, name=nvidia-smi, Timeout after 6s of waiting for RPC response from GPU4 "
            "GSP! Expected function 103 (GSP_RM_ALLOC)",
        ),
        (
            "NVRM: Xid (PCI:0009:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x4 "
            "(Drain and Reset)",
            "0009:01:00",
            154,
            "GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)",
        ),
        (
            "NVRM: Xid (PCI:0008:01:00): 145, pid=11436, name=cache_mgr_main, RLW_SRC_TRACK "
            "Nonfatal XC1 i0 Link 03 (0x040868e2 0x00000008 0x00000000 0x00000000)",
            "0008:01:00",
            145,
            "pid=11436, name=cache_mgr_main, RLW_SRC_TRACK Nonfatal XC1 i0 Link 03 (0x040868e2 "
            "0x00000008 0x00000000 0x00000000)",
        ),
        (
            "NVRM: Xid (PCI:0000:3f:00): 31, pid=2038, name=python, Ch 00000010, intr 00000000. "
            "MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f60_d72f8000",
            "0000:3f:00",
            31,
            "pid=2038, name=python, Ch 00000010, intr 00000000. MMU Fault: ENGINE GRAPHICS "
            "GPCCLIENT_T1_0 faulted @ 0x7f60_d72f8000",
        ),
        ("NVRM: Xid (PCI:0000:cb:00): 48", "0000:cb:00", 48, ""),
    ],
)
def test_real_xid_lines(line, bus, code, rest):  # noqa: ANN001
    assert parse_xid(line) == (bus, code, rest)


@pytest.mark.parametrize(
    "line",
    [
        "NVRM: GPU at PCI:0000:9b:00: GPU-509665ad-b600-ac93-3616-d754b23d636d",
        "NVRM: GPU 0000:29:00.0: GPU has fallen off the bus.",
        "NVRM: Xid error: xyz, invalid data",
        "nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context",
    ],
)
def test_other_lines_are_not_xids(line):  # noqa: ANN001
    assert parse_xid(line) is None


def test_line_formats_give_their_time():
    now = dt.datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    booted = (now - dt.timedelta(hours=1)).timestamp()
    kmsg = parse_record("4,1234,60000000,-;NVRM: Xid (PCI:0000:17:00): 79", booted=booted, now=now)
    assert kmsg.seq == 1234 and kmsg.ts == now - dt.timedelta(minutes=59)
    assert kmsg.message == "NVRM: Xid (PCI:0000:17:00): 79"
    iso = parse_record(
        "2026-11-30T05:09:06-0600 gpu-a017 kernel: NVRM: Xid (PCI:0000:01:00): 43, pid=1",
        booted=booted,
        now=now,
    )
    assert iso.ts == dt.datetime(2026, 11, 30, 11, 9, 6, tzinfo=UTC) and iso.seq is None
    assert iso.message.startswith("NVRM: Xid")
    precise = parse_record("2026-11-30T11:09:06.250000+00:00 h kernel: x", booted=booted, now=now)
    assert precise.ts == dt.datetime(2026, 11, 30, 11, 9, 6, 250000, tzinfo=UTC)
    dmesg = parse_record("[  120.500000] NVRM: Xid (PCI:0000:01:00): 13", booted=booted, now=now)
    assert dmesg.ts == now - dt.timedelta(hours=1) + dt.timedelta(seconds=120.5)
    later = parse_record("[99999.0] NVRM: x", booted=booted, now=now)
    assert later.ts == now  # another boot's uptime cannot be in the future
    plain = parse_record("NVRM: Xid (PCI:0000:01:00): 13, pid=1", booted=booted, now=now)
    assert plain.ts is None and plain.message.startswith("NVRM")


def xid_line(t: dt.datetime, bus: str, code: int, rest: str = "pid=1, name=python") -> str:
    return f"{t.isoformat()} gpu-a017 kernel: NVRM: Xid (PCI:{bus}): {code}, {rest}\n"


def spooled(spool: Spool) -> list[tuple[str, int]]:
    """(PCI address, code) of every event waiting in the spool, oldest first."""
    out = []
    for item in spool.pending():
        assert item.path == EVENTS_PATH
        out += [(e["pci_bus"], e["code"]) for e in json.loads(item.body)["events"]]
    return out


def follower(log: Path, spool: Spool, **options: object) -> XidFollower:
    return XidFollower(
        FileLog(log), node="gpu-a017", spool=spool, cursor_file=spool.root / "kmsg.cursor",
        **options,
    )  # fmt: skip


def test_a_growing_file_with_a_restart_in_the_middle(tmp_path):
    now = dt.datetime.now(UTC).replace(microsecond=0)
    log, spool = tmp_path / "kern.log", Spool(tmp_path / "spool")
    log.write_text(
        xid_line(now, "0000:17:00", 79)
        + f"{now.isoformat()} gpu-a017 kernel: eth0: link up\n"
        + xid_line(now, "0000:28:00", 13)
    )
    first = follower(log, spool)
    assert first.poll() == 2
    assert first.poll() == 0  # nothing new
    with log.open("a") as handle:  # one whole line and one still being written
        handle.write(xid_line(now, "0000:38:00", 48))
        handle.write(xid_line(now, "0000:48:00", 94)[:40])
    assert first.poll() == 1
    # The agent restarts: a new follower, same spool and cursor.
    second = follower(log, spool)
    assert second.poll() == 0
    with log.open("a") as handle:
        handle.write(xid_line(now, "0000:48:00", 94)[40:])
        handle.write(xid_line(now, "0000:58:00", 31))
    assert second.poll() == 2
    assert follower(log, spool).poll() == 0
    assert spooled(spool) == [
        ("0000:17:00", 79),
        ("0000:28:00", 13),
        ("0000:38:00", 48),
        ("0000:48:00", 94),
        ("0000:58:00", 31),
    ]
    event = json.loads(spool.pending()[0].body)["events"][0]
    assert event == {
        "node": "gpu-a017",
        "ts": now.isoformat().replace("+00:00", "Z"),
        "kind": "xid",
        "code": 79,
        "pci_bus": "0000:17:00",
        "message": "pid=1, name=python",
    }


def test_a_crash_between_spooling_and_saving_the_position_sends_nothing_twice(tmp_path):
    now = dt.datetime.now(UTC)
    log, spool = tmp_path / "kern.log", Spool(tmp_path / "spool")
    log.write_text(xid_line(now, "0000:17:00", 79))
    crashing = follower(log, spool)

    def crash(position: dict | None) -> None:
        raise KeyboardInterrupt  # killed after the spool write, before the cursor write

    crashing._save = crash  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        crashing.poll()
    assert not (spool.root / "kmsg.cursor").exists() and len(spooled(spool)) == 1
    restarted = follower(log, spool)
    assert restarted.poll() == 0
    with log.open("a") as handle:
        handle.write(xid_line(now, "0000:28:00", 13))
    assert restarted.poll() == 1
    assert spooled(spool) == [("0000:17:00", 79), ("0000:28:00", 13)]


def test_large_bursts_are_split_into_requests(tmp_path):
    now = dt.datetime.now(UTC)
    log, spool = tmp_path / "kern.log", Spool(tmp_path / "spool")
    log.write_text("".join(xid_line(now, "0000:17:00", 119, f"n={i}") for i in range(2500)))
    assert follower(log, spool).poll() == 2500
    sizes = [len(json.loads(i.body)["events"]) for i in spool.pending()]
    assert sizes == [1000, 1000, 500]


def test_a_first_start_skips_xids_older_than_the_backfill(tmp_path):
    now = dt.datetime.now(UTC)
    log, spool = tmp_path / "kern.log", Spool(tmp_path / "spool")
    log.write_text(
        xid_line(now - dt.timedelta(days=3), "0000:17:00", 79)
        + xid_line(now - dt.timedelta(minutes=5), "0000:28:00", 13)
    )
    assert follower(log, spool, backfill_s=3600).poll() == 1
    assert spooled(spool) == [("0000:28:00", 13)]
    other = Spool(tmp_path / "all")
    assert follower(log, other, backfill_s=float("inf")).poll() == 2


def kmsg_line(seq: int, bus: str, code: int) -> str:
    return f"4,{seq},{1000 + seq},-;NVRM: Xid (PCI:{bus}): {code}, pid=7, name=python\n"


def test_a_replaced_kmsg_dump_is_read_from_its_sequence_number(tmp_path):
    log, spool = tmp_path / "kmsg.txt", Spool(tmp_path / "spool")
    log.write_text(kmsg_line(10, "0000:17:00", 79) + kmsg_line(11, "0000:28:00", 13))
    assert follower(log, spool, backfill_s=float("inf")).poll() == 2
    # Re-dumped to a new file (new inode) holding the old records and one new one.
    replacement = tmp_path / "kmsg.new"
    replacement.write_text(
        kmsg_line(10, "0000:17:00", 79) + kmsg_line(11, "0000:28:00", 13)
        + kmsg_line(12, "0000:38:00", 48) + " SUBSYSTEM=pci\n"
    )  # fmt: skip
    replacement.replace(log)
    assert follower(log, spool).poll() == 1
    assert spooled(spool)[-1] == ("0000:38:00", 48)


FAKE_JOURNALCTL = """#!{python}
import json, os, sys
entries = [json.loads(l) for l in open(os.environ["FAKE_JOURNAL"])]
after = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--after-cursor=")), None)
with open(os.environ["FAKE_JOURNAL"] + ".calls", "a") as calls:
    calls.write(" ".join(sys.argv[1:]) + "\\n")
if after is not None:
    cursors = [e["__CURSOR"] for e in entries]
    if after not in cursors:
        sys.exit("Failed to seek to cursor: Invalid argument")
    entries = entries[cursors.index(after) + 1:]
for e in entries:
    print(json.dumps(e))
"""


def test_the_journal_is_followed_by_its_cursor(tmp_path, monkeypatch):
    binary = tmp_path / "journalctl"
    binary.write_text(FAKE_JOURNALCTL.format(python=sys.executable))
    binary.chmod(0o755)
    journal = tmp_path / "journal.jsonl"
    monkeypatch.setenv("FAKE_JOURNAL", str(journal))
    now_us = int(dt.datetime.now(UTC).timestamp() * 1e6)

    def entry(n: int, message: object) -> str:
        fields = {"__CURSOR": f"s=abc;i={n}", "__REALTIME_TIMESTAMP": str(now_us + n)}
        return json.dumps({**fields, "MESSAGE": message}) + "\n"

    journal.write_text(
        entry(1, "NVRM: Xid (PCI:0000:17:00): 79, GPU has fallen off the bus.")
        + entry(2, "eth0: link up")
    )
    spool = Spool(tmp_path / "spool")

    def journal_follower() -> XidFollower:
        return XidFollower(
            Journal(str(binary)), node="n1", spool=spool, cursor_file=tmp_path / "cursor"
        )

    assert journal_follower().poll() == 1
    raw = list(b"NVRM: Xid (PCI:0000:28:00): 13, pid=9, name=\xffbad")  # not UTF-8
    with journal.open("a") as handle:
        handle.write(entry(3, raw))
    assert journal_follower().poll() == 1  # a restart: resumes after i=2
    calls = (tmp_path / "journal.jsonl.calls").read_text().splitlines()
    assert "-b" in calls[0].split() and "--since=@" in calls[0]
    assert calls[1].endswith("--after-cursor=s=abc;i=2")
    # The journal was vacuumed and the cursor is gone: read again from the entry's time.
    journal.write_text(entry(7, "NVRM: Xid (PCI:0000:38:00): 48, Ch 00000001"))
    assert journal_follower().poll() == 1
    calls = (tmp_path / "journal.jsonl.calls").read_text().splitlines()
    assert calls[2].endswith("--after-cursor=s=abc;i=3")
    assert calls[3].endswith(f"--since=@{int((now_us + 3) / 1e6)}")
    events = [e for item in spool.pending() for e in json.loads(item.body)["events"]]
    assert [(e["pci_bus"], e["code"]) for e in events] == [
        ("0000:17:00", 79),
        ("0000:28:00", 13),
        ("0000:38:00", 48),
    ]
    first = dt.datetime.fromtimestamp((now_us + 1) / 1e6, UTC)
    assert events[0]["ts"] == first.isoformat().replace("+00:00", "Z")


@pytest.mark.skipif(not os.access("/dev/kmsg", os.R_OK), reason="no readable /dev/kmsg")
def test_the_real_dev_kmsg_is_read_by_sequence_number():
    device = KmsgDevice()
    try:
        records = list(device.read(None))
    except PermissionError:
        pytest.skip("/dev/kmsg not readable here")
    finally:
        device.close()
    assert records, "the kernel's buffer is never empty after boot"
    seqs = [position["seq"] for _, position in records]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    again = KmsgDevice()
    try:
        newer = list(again.read(records[-1][1]))  # resumed from the last position
    finally:
        again.close()
    assert all(position["seq"] > seqs[-1] for _, position in newer)


def test_the_options_pick_the_reader(tmp_path):
    def reader(*options: str) -> object:
        args = parser().parse_args(
            ["run", "--server", "http://x", "--spool", str(tmp_path), *options]
        )
        made = kernel_log(args, Spool(tmp_path))
        return made.reader if made else None  # fmt: skip

    assert reader() is None
    assert isinstance(reader("--kmsg-file", str(tmp_path / "f")), FileLog)
    assert isinstance(reader("--kmsg", "kmsg"), KmsgDevice)
    assert isinstance(reader("--kmsg", "journal"), Journal)
    assert isinstance(reader("--kmsg", "--journalctl", "/nonexistent/journalctl"), KmsgDevice)
