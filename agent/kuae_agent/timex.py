"""The kernel's clock discipline as `adjtimex(2)` reports it, read through glibc with ctypes
(docs/agent.md, Host readings): the offset the time daemon is steering out and whether the
kernel counts the clock as synchronised.

The call only reads (`modes` = 0: no privilege needed). `struct timex` is laid out as glibc's
`bits/timex.h` declares it for 64-bit Linux (x86_64, aarch64): `modes` an unsigned int, the
kernel's longs (`offset`, `freq`, …) 8 bytes wide, `status` an int, and eleven spare ints at
its end — 208 bytes, `offset` at byte 8, `status` at byte 40. On a 32-bit build, or without
glibc's `adjtimex`, there is no reading (None), never a guessed one.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import struct
from dataclasses import dataclass

STA_UNSYNC = 0x0040  # the clock is not synchronised
STA_NANO = 0x2000  # `offset` is in nanoseconds, else microseconds
TIME_ERROR = 5  # adjtimex's answer while the clock is not synchronised


class Timeval(ctypes.Structure):
    """`struct timeval` on 64-bit Linux."""

    _fields_ = [("tv_sec", ctypes.c_long), ("tv_usec", ctypes.c_long)]


class Timex(ctypes.Structure):
    """glibc's `struct timex` on 64-bit Linux (`__syscall_slong_t` is a long)."""

    _fields_ = [
        ("modes", ctypes.c_uint),
        ("offset", ctypes.c_long),
        ("freq", ctypes.c_long),
        ("maxerror", ctypes.c_long),
        ("esterror", ctypes.c_long),
        ("status", ctypes.c_int),
        ("constant", ctypes.c_long),
        ("precision", ctypes.c_long),
        ("tolerance", ctypes.c_long),
        ("time", Timeval),
        ("tick", ctypes.c_long),
        ("ppsfreq", ctypes.c_long),
        ("jitter", ctypes.c_long),
        ("shift", ctypes.c_int),
        ("stabil", ctypes.c_long),
        ("jitcnt", ctypes.c_long),
        ("calcnt", ctypes.c_long),
        ("errcnt", ctypes.c_long),
        ("stbcnt", ctypes.c_long),
        ("tai", ctypes.c_int),
        ("_spare", ctypes.c_int * 11),
    ]


class ClockUnavailable(Exception):
    """No clock reading can be had here; the message says why."""


@dataclass(frozen=True)
class ClockReading:
    """What one `adjtimex` call said."""

    offset_s: float  # the offset still to be steered out, in seconds
    synced: bool


def reading(state: int, offset: int, status: int) -> ClockReading:
    """adjtimex's answer (`state`) and the struct's `offset` and `status` → a reading: the
    offset in seconds (nanoseconds when STA_NANO is set, else microseconds), synchronised
    unless STA_UNSYNC is set or the kernel answered TIME_ERROR (as node_exporter's
    `node_timex_sync_status` reads it)."""
    scale = 1e-9 if status & STA_NANO else 1e-6
    synced = state != TIME_ERROR and not status & STA_UNSYNC
    return ClockReading(offset_s=offset * scale, synced=synced)


def read_clock() -> ClockReading:
    """The kernel's clock reading now; raises ClockUnavailable where it cannot be had (not
    64-bit Linux with a C library that has `adjtimex`, or the call failed)."""
    if struct.calcsize("P") != 8 or ctypes.sizeof(ctypes.c_long) != 8:
        raise ClockUnavailable("adjtimex is read on 64-bit Linux only")
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        adjtimex = libc.adjtimex
    except (OSError, AttributeError) as exc:
        raise ClockUnavailable(f"no adjtimex in the C library ({exc})") from exc
    adjtimex.argtypes = [ctypes.POINTER(Timex)]
    adjtimex.restype = ctypes.c_int
    buf = Timex()  # modes = 0: read only
    state = adjtimex(ctypes.byref(buf))
    if state < 0:
        raise ClockUnavailable(f"adjtimex failed (errno {ctypes.get_errno()})")
    return reading(state, buf.offset, buf.status)
