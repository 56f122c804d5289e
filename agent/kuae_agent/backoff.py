"""When to try the server again: one backoff for every sender in the agent (docs/agent.md).

The node agent's spool drain (`client.Client.drain`) and the training Reporter's sender both
wait the same way after a retryable failure (5xx, timeout, refused connection): the n-th
failure in a row waits

    min(cap, base_s · 2^(n−1)) · U(0.5, 1)

seconds — exponential, capped, and jittered downwards by up to half, so a rack of agents that
lost the server together do not come back in lockstep (and a wait never exceeds the cap). A
success starts the count again. Pure: no I/O, the caller passes its own clock.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

# Past this many doublings every sensible cap has long won; it also keeps 2^n a small float.
_MAX_DOUBLINGS = 30


def backoff_delay(failures: int, *, base_s: float, max_s: float, jitter: float = 1.0) -> float:
    """The wait after `failures` retryable failures in a row (0 → no wait). `jitter` in
    [0, 1] picks the point in the jitter range: 1 the full capped delay, 0 its half."""
    if failures <= 0:
        return 0.0
    nominal = min(max_s, base_s * 2.0 ** min(failures - 1, _MAX_DOUBLINGS))
    return nominal * (0.5 + 0.5 * jitter)


@dataclass
class Backoff:
    """The failures-in-a-row count and the earliest time to try again, on the caller's
    monotonic clock. `base_s` is the first (unjittered) wait, `max_s` the cap."""

    base_s: float = 1.0
    max_s: float = 60.0
    failures: int = 0
    not_before: float = 0.0
    rng: random.Random = field(default_factory=random.Random, repr=False)

    def ready(self, now: float) -> bool:
        """Whether a try is due at `now`."""
        return now >= self.not_before

    def failed(self, now: float, *, cap_s: float | None = None) -> float:
        """Count a retryable failure at `now` and return the wait before the next try;
        `cap_s` lowers the cap for this wait (a flush that must finish soon)."""
        self.failures += 1
        cap = self.max_s if cap_s is None else min(self.max_s, cap_s)
        delay = backoff_delay(
            self.failures, base_s=self.base_s, max_s=cap, jitter=self.rng.random()
        )
        self.not_before = now + delay
        return delay

    def succeeded(self) -> None:
        """The server answered: the next failure waits the first delay again."""
        self.failures = 0

    def retry_now(self) -> None:
        """Try at once, whatever the last wait said (the count stays)."""
        self.not_before = 0.0
