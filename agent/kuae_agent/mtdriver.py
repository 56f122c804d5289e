"""Moore Threads driver lines in the kernel log (`--kmsg-mthreads`; docs/agent.md).

Moore Threads publish no catalogue of their kernel driver's (`mtgpu`) fault lines, as NVIDIA
do for XIDs. So no line is given a code or a meaning here: a line of the driver that the
kernel logged as a warning or worse (or whose level the log format does not give) is sent
as it is, an event of kind `mthreads_driver` that the server judges as an unknown fault
(it warns). Its lines are known by what the driver writes:

- `MTGPU: …` — the driver's own prefix;
- `mtgpu 0000:3b:00.0: …` — the kernel's device messages for the `mtgpu` driver, which
  name the GPU's PCI address;
- `WARNING: … [mtgpu]` and `BUG: … [mtgpu]` — the first line of a kernel warning or oops
  in the driver's code (the stack lines after it are not sent one by one).
"""

from __future__ import annotations

import re

KIND = "mthreads_driver"
WARNING = 4  # syslog level: 0 emergency … 3 error, 4 warning … 7 debug

_LINE = re.compile(
    r"^\s*(?:MTGPU\b"
    r"|mtgpu\s+(?P<bus>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]):"
    r"|(?:WARNING|BUG):.*\[mtgpu\])"
)


def parse_mthreads(message: str, level: int | None) -> tuple[str, str] | None:
    """(PCI address or '', the line) of a Moore Threads driver line worth sending: a warning
    or worse, or one of unknown level. None for any other line."""
    match = _LINE.match(message)
    if match is None or (level is not None and level > WARNING):
        return None
    return match["bus"] or "", message.strip()
