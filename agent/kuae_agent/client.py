"""Delivery to the KUAE Ops API: retry 5xx and timeouts with backoff, never a 4xx."""

from __future__ import annotations

import logging
import time
from enum import Enum
from typing import Any

import httpx

from kuae_agent.backoff import Backoff
from kuae_agent.spool import Item, Spool

log = logging.getLogger("kuae_agent")


class Outcome(Enum):
    """What a delivery attempt means for the request."""

    STORED = "stored"  # 2xx: durably stored
    REJECTED = "rejected"  # 4xx: the server will never take it
    RETRY = "retry"  # 5xx, timeout, connection error: try again later


class Client:
    """Posts requests with a token; keeps the backoff state between attempts."""

    def __init__(
        self, server: str, token: str, *, timeout_s: float = 10.0, backoff_max_s: float = 60.0
    ) -> None:
        self.server = server.rstrip("/")
        self.http = httpx.Client(timeout=timeout_s, headers={"Authorization": f"Token {token}"})
        # The first wait is 2 s (1–2 s jittered), doubling up to `backoff_max_s`.
        self.backoff = Backoff(base_s=2.0, max_s=backoff_max_s)

    @property
    def failures(self) -> int:
        """Retryable failures in a row (0 after a success)."""
        return self.backoff.failures

    @property
    def not_before(self) -> float:
        """The monotonic time before which `drain` does not try."""
        return self.backoff.not_before

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self.http.close()

    def send(self, path: str, body: str, content_type: str) -> tuple[Outcome, str]:
        """One attempt; returns the outcome and a short reason."""
        try:
            response = self.http.post(
                self.server + path, content=body.encode(), headers={"Content-Type": content_type}
            )
        except httpx.TimeoutException:
            return Outcome.RETRY, "timeout"
        except httpx.TransportError as exc:
            return Outcome.RETRY, f"{type(exc).__name__}: {exc}"
        if response.is_success:
            return Outcome.STORED, str(response.status_code)
        if 400 <= response.status_code < 500:
            return Outcome.REJECTED, f"HTTP {response.status_code}: {response.text[:1000]}"
        return Outcome.RETRY, f"HTTP {response.status_code}"

    def request_json(
        self, method: str, path: str, *, body: Any = None, params: dict[str, str] | None = None
    ) -> tuple[Outcome, Any]:
        """One JSON request (`GET`, `POST`, `PATCH`); returns the outcome and the answer's JSON
        (None when it has none), or a short reason when it was not stored."""
        try:
            response = self.http.request(method, self.server + path, json=body, params=params)
        except httpx.TimeoutException:
            return Outcome.RETRY, "timeout"
        except httpx.TransportError as exc:
            return Outcome.RETRY, f"{type(exc).__name__}: {exc}"
        if response.is_success:
            try:
                return Outcome.STORED, response.json() if response.content else None
            except ValueError:
                return Outcome.STORED, None
        if 400 <= response.status_code < 500:
            return Outcome.REJECTED, f"HTTP {response.status_code}: {response.text[:1000]}"
        return Outcome.RETRY, f"HTTP {response.status_code}"

    def drain(self, spool: Spool, *, now: float | None = None) -> int:
        """Deliver spooled requests oldest first until one must wait; returns how many were
        stored. After a retryable failure, waits (exponential backoff with jitter)."""
        now = time.monotonic() if now is None else now
        if not self.backoff.ready(now):
            return 0
        stored = 0
        for item in spool.pending():
            outcome, reason = self.send(item.path, item.body, item.content_type)
            if outcome is Outcome.STORED:
                spool.done(item)
                stored += 1
                self.backoff.succeeded()
            elif outcome is Outcome.REJECTED:
                spool.reject(item.file, reason)
            else:
                self._back_off(now, item, reason)
                break
        return stored

    def _back_off(self, now: float, item: Item, reason: str) -> None:
        delay = self.backoff.failed(now)
        log.warning(
            "server unavailable (%s) for %s; retrying in %.0f s", reason, item.file.name, delay
        )
