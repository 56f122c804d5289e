"""How deep a JSON text nests, found before it is parsed (docs/operations.md, Limits: depth 64).
Pure.

Python's `json` recurses once per level, so `[[[[…` ten thousand deep is a RecursionError
(a 500) rather than a bad request; orjson stops at its own 1,024. `too_deep` looks at the
raw bytes instead, with C-speed passes and no Python code per character: escapes are
dropped (so every quote left opens or closes a string), everything but brackets and quotes
is dropped, string literals are dropped (their brackets do not count), and what is left,
brackets only, is summed as +1 per opener and -1 per closer: its highest running total is
the depth.
"""

from __future__ import annotations

import re
from itertools import accumulate

from apps.common.limits import JSON_DEPTH

_KEEP = b'[]{}"'
_NOT_KEPT = bytes(b for b in range(256) if b not in _KEEP)
_OPEN_CLOSE = bytes.maketrans(b"{}", b"[]")
# In what is left, a string is a quote, brackets, a quote (or the rest, unterminated).
_STRING = re.compile(rb'"[^"]*"?')
_STEP = [0] * 256
_STEP[ord("[")], _STEP[ord("]")] = 1, -1


def too_deep(body: bytes, limit: int = JSON_DEPTH) -> bool:
    """Whether the JSON text `body` nests objects and arrays more than `limit` deep (a text
    that is not JSON may be judged either way; its parser refuses it)."""
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    if b'"' in body:
        body = body.replace(b"\\\\", b"").replace(b'\\"', b"")
    shape = body.translate(_OPEN_CLOSE, _NOT_KEPT)
    if b'"' in shape:
        # Two quotes side by side are an empty string or the gap between two strings:
        # dropping them leaves every other character inside or outside a string as it was.
        shape = shape.replace(b'""', b"")
        if b'"' in shape:
            shape = _STRING.sub(b"", shape)
    if b"[" * (limit + 1) in shape:
        return True
    return max(accumulate(map(_STEP.__getitem__, shape)), default=0) > limit
