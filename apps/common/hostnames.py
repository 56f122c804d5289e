"""Hostnames and Slurm hostlists (docs/operations.md, Limits). Pure.

A hostname is a DNS name: labels of letters, digits and `-` (not first or last), each at
most 63 characters, dot-separated, at most 253 characters in all (RFC 1123). Everything that
names a node for the first time (`POST nodes/`, the Slurm intake) goes through
`hostname_clean`, so a name such as `a/b` (a broken URL for every page that links it) never
becomes a node. Like DNS names, hostnames compare without regard to case: every name that
comes in (registration, intakes, URLs, scopes, hostlists) is put in lower case at the door by
`hostname_key`, so `R007N01` is `r007n01`, never a second node.

A hostlist (`gpu[001-004,007],login1`) is expanded by `Hostlists`, which counts what an
expression would give from its ranges before making a single name, and refuses one that
would take the request past its bound (`HOSTLIST_NAMES` names, summed over every expression
the request holds): `gpu[0000000-9999999]` is 20 bytes and would be ten million names. The
grammar and the order of names are those of python-hostlist's `expand_hostlist`: top-level
commas separate parts; a part is text and bracketed range lists (`[1-3,7]`, not nested),
the first bracket varying slowest; a range keeps its low end's zero padding; duplicates are
dropped, the first kept.

The expander is our own rather than python-hostlist's (a test dependency: the oracle of
tests/common/test_bounds_pure.py): `expand_hostlist` makes the names before checking them,
against one module-wide cap per part (100,000) and nothing per request, so a short field
can make millions of names, and deep brackets end in RecursionError; its errors do not say
which range is wrong (docs/operations.md, Limits).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

from apps.common.limits import HOSTLIST_NAMES, HOSTNAME_LENGTH

_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
_RANGE = re.compile(r"([0-9]{1,63})(?:-([0-9]{1,63}))?")
_SYNTAX = re.compile(r"[\[\]]|,+")
_SHOWN = 80  # how much of a refused value an error message repeats


def _shown(value: str) -> str:
    return repr(value if len(value) <= _SHOWN else value[:_SHOWN] + "…")


_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def hostname_key(name: str) -> str:
    """`name` as hostnames are kept and compared: its ASCII letters in lower case (DNS names
    compare without regard to case; other characters, never in a hostname, are left alone so
    that no other name folds onto one)."""
    return name.translate(_LOWER)


def hostname_problem(name: str) -> str | None:
    """Why `name` is not a DNS name, or None when it is one."""
    if not name:
        return "a hostname must not be empty"
    if len(name) > HOSTNAME_LENGTH:
        return f"a hostname is at most {HOSTNAME_LENGTH} characters ({len(name)} given)"
    if not all(_LABEL.fullmatch(label) for label in name.split(".")):
        return (
            f"{_shown(name)} is not a DNS name: dot-separated labels of letters, digits and "
            "'-' (not first or last), each 1-63 characters"
        )
    return None


def hostname_clean(value: object) -> str:
    """`value` as a hostname, in lower case (`hostname_key`); ValueError saying why it is
    not one."""
    if not isinstance(value, str):
        raise ValueError("a hostname must be a string")
    problem = hostname_problem(value)
    if problem:
        raise ValueError(problem)
    return hostname_key(value)


class HostlistError(ValueError):
    """Not a hostlist expression, or one past the bound (`HostlistTooLarge`)."""


class HostlistTooLarge(HostlistError):
    """Expanding the expression would take its request past `limit` names."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"expands past the bound on hostlist expansion: {limit:,} names per request"
        )
        self.limit = limit


class _PastRoom(Exception):
    """The expression gives more names than the request has room for."""


# A part of an expression: literal text and range lists, each a tuple of (low, high, width)
# ranges (a single number is a range of one, written as given).
_Range = tuple[int, int, int]
_Segment = str | tuple[_Range, ...]


def _parse(expression: str, room: int) -> list[list[_Segment]]:
    """The expression's parts (empty ones dropped), in one pass over its brackets and commas.

    Cheap refusals come first, so no input makes long lists or long loops: each part gives
    at least one name, plus one per comma in its brackets — once that floor is past `room`,
    _PastRoom; a part whose shortest name is longer than a hostname may be is refused as soon
    as it is."""
    parts: list[list[_Segment]] = []
    segments: list[_Segment] = []
    shortest = floor = pos = 0
    while (match := _SYNTAX.search(expression, pos)) is not None:
        char, at = match.group()[0], match.start()
        if char == "]":
            raise HostlistError("unbalanced brackets")
        if at > pos:
            segments.append(expression[pos:at])
            shortest += at - pos
        pos = match.end()
        if char == "[":
            close = expression.find("]", pos)
            if close < 0:
                raise HostlistError("unbalanced brackets")
            body = expression[pos:close]
            if "[" in body:
                raise HostlistError("nested brackets")
            floor += body.count(",")
            if floor > room:
                raise _PastRoom
            ranges = tuple(_range(item) for item in body.split(","))
            segments.append(ranges)
            shortest += min(width for _, _, width in ranges)
            pos = close + 1
        elif segments:
            parts.append(segments)
            segments, shortest = [], 0
            floor += 1
            if floor > room:
                raise _PastRoom
        if shortest > HOSTNAME_LENGTH:
            raise HostlistError(f"gives names longer than {HOSTNAME_LENGTH} characters")
    if pos < len(expression):
        segments.append(expression[pos:])
        shortest += len(expression) - pos
        if shortest > HOSTNAME_LENGTH:
            raise HostlistError(f"gives names longer than {HOSTNAME_LENGTH} characters")
    if segments:
        parts.append(segments)
    return parts


def _range(item: str) -> _Range:
    match = _RANGE.fullmatch(item)
    if not match:
        raise HostlistError(f"bad range {_shown(item)}: a number or low-high")
    low, high = match.group(1), match.group(2)
    if high is None:
        return int(low), int(low), len(low)
    if int(high) < int(low):
        raise HostlistError(f"bad range {_shown(item)}: start > stop")
    return int(low), int(high), len(low)


def _size(segments: list[_Segment], cap: int) -> int:
    """How many names the part gives, or any number above `cap` once it is past it (so a
    thousand huge ranges cost no big-number arithmetic)."""
    size = 1
    for segment in segments:
        if isinstance(segment, tuple):
            size *= sum(high - low + 1 for low, high, _ in segment)
            if size > cap:
                return cap + 1
    return size


def _names(segments: list[_Segment]) -> Iterator[str]:
    """The part's names, made one at a time."""
    choices = [
        [segment] if isinstance(segment, str) else list(_numbers(segment)) for segment in segments
    ]
    for pieces in itertools.product(*choices):
        yield "".join(pieces)


def _numbers(ranges: tuple[_Range, ...]) -> Iterator[str]:
    for low, high, width in ranges:
        for number in range(low, high + 1):
            yield f"{number:0{width}d}"


class Hostlists:
    """Expands the hostlists of one request within its bound on names (`limit`, summed over
    every expression expanded through this object), counting before expanding."""

    def __init__(self, limit: int = HOSTLIST_NAMES) -> None:
        self.limit = limit
        self.used = 0

    def expand(self, expression: str) -> list[str]:
        """The expression's names in order, without duplicates; HostlistError when it is not
        a hostlist, HostlistTooLarge (before any name is made) when its names would take the
        request past its bound."""
        room = self.limit - self.used
        try:
            parts = _parse(expression, room)
            total = 0
            for segments in parts:
                total += _size(segments, room)
                if total > room:
                    raise _PastRoom
        except _PastRoom:
            raise HostlistTooLarge(self.limit) from None
        self.used += total
        return list(dict.fromkeys(name for segments in parts for name in _names(segments)))

    def hostnames(self, expression: str) -> list[str]:
        """`expand`, each name checked to be a DNS name (HostlistError naming the first that
        is not) and put in lower case (`hostname_key`; `GPU1,gpu1` is one name)."""
        names = self.expand(expression)
        for name in names:
            problem = hostname_problem(name)
            if problem:
                raise HostlistError(problem)
        return list(dict.fromkeys(map(hostname_key, names)))
