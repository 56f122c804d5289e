"""A stalled rank's Python stack: its digest, the frame it is stuck in, the collective it
waits in. Pure (no Django): the intake and the tests call it alike.

A stack is a list of frames `(file, function, line)`, innermost last, at most `MAX_FRAMES`
(a deeper one keeps its innermost frames). Its digest is the sha256 of its canonical JSON,
so 10,000 ranks waiting in the same place store one stack.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import orjson

MAX_FRAMES = 64
FILE_LENGTH = 1_000
FUNCTION_LENGTH = 200

# Where library code lives: a frame in one of these is not the training code's.
_LIBRARY = ("/site-packages/", "/dist-packages/", "/lib/python3.", "kuae_agent")
# The torch.distributed functions a rank waits in (a leading `_` is dropped first:
# `_all_gather_base` is all_gather_base).
COLLECTIVES = frozenset(
    {
        "all_reduce",
        "all_reduce_coalesced",
        "all_gather",
        "all_gather_base",
        "all_gather_into_tensor",
        "all_gather_object",
        "all_gather_coalesced",
        "reduce_scatter",
        "reduce_scatter_base",
        "reduce_scatter_tensor",
        "all_to_all",
        "all_to_all_single",
        "broadcast",
        "broadcast_object_list",
        "reduce",
        "gather",
        "gather_object",
        "scatter",
        "scatter_object_list",
        "barrier",
        "monitored_barrier",
        "send",
        "recv",
        "isend",
        "irecv",
        "batch_isend_irecv",
        "wait",
    }
)


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame of a stack."""

    file: str
    function: str
    line: int


@dataclass(frozen=True, slots=True)
class Stack:
    """A stack as stored: its frames (innermost last), digest and what is derived from it."""

    frames: tuple[Frame, ...]
    digest: str
    frame: str
    collective: str

    def as_json(self) -> list[dict[str, object]]:
        """The frames as the API writes them: `[{file, function, line}]`."""
        return [{"file": f.file, "function": f.function, "line": f.line} for f in self.frames]


def is_library(file: str) -> bool:
    """Whether `file` is library code: under site-packages or dist-packages, the Python
    standard library, a frozen module, or the agent itself."""
    return file.startswith("<frozen") or any(part in file for part in _LIBRARY)


def training_frame(frames: tuple[Frame, ...]) -> str:
    """The innermost frame outside library code as "function (file:line)"; the innermost
    frame of all when every frame is library code; "" for no frames."""
    chosen = next((f for f in reversed(frames) if not is_library(f.file)), None)
    if chosen is None and frames:
        chosen = frames[-1]
    return f"{chosen.function} ({chosen.file}:{chosen.line})" if chosen is not None else ""


def collective_of(frames: tuple[Frame, ...]) -> str:
    """The innermost torch.distributed function on the stack that a rank waits in
    (`all_reduce`, `barrier`, `wait` …), or ""."""
    for f in reversed(frames):
        name = f.function.rsplit(".", 1)[-1].lstrip("_")
        if name in COLLECTIVES and "torch/distributed" in f.file.replace("\\", "/"):
            return name
    return ""


def digest_of(frames: tuple[Frame, ...]) -> str:
    """sha256 (hex) of the frames' canonical JSON: `[{"file":…,"function":…,"line":…}]`,
    keys sorted, no spaces, UTF-8 (Python's `json.dumps(frames, sort_keys=True,
    separators=(",", ":"), ensure_ascii=False)`)."""
    body = orjson.dumps(
        [{"file": f.file, "function": f.function, "line": f.line} for f in frames],
        option=orjson.OPT_SORT_KEYS,
    )
    return hashlib.sha256(body).hexdigest()


def stack_of(frames: tuple[Frame, ...]) -> Stack:
    """The stack of `frames` (already cut to the innermost MAX_FRAMES)."""
    return Stack(frames, digest_of(frames), training_frame(frames), collective_of(frames))


def function_of(frame: str) -> str:
    """The function of a "function (file:line)" frame: what a sentence names."""
    return frame.rsplit(" (", 1)[0] if frame.endswith(")") and " (" in frame else frame
