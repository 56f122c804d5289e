"""The agent's one backoff (kuae_agent/backoff.py), as both the spool drain and the training
Reporter use it: capped doubling, jittered down by up to half, reset by a success."""

from __future__ import annotations

import random

import pytest

from kuae_agent.backoff import Backoff, backoff_delay
from kuae_agent.client import Client


def test_the_schedule_doubles_from_the_base_up_to_the_cap():
    full = [backoff_delay(n, base_s=1.0, max_s=30.0) for n in range(8)]
    assert full == [0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    half = [backoff_delay(n, base_s=2.0, max_s=60.0, jitter=0.0) for n in range(1, 7)]
    assert half == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0]  # the jitter's floor: half the full wait
    # A run of failures far past any cap neither overflows nor exceeds it.
    assert backoff_delay(10_000, base_s=1.0, max_s=30.0) == 30.0


def test_each_wait_lies_in_its_jitter_range_and_a_success_starts_again():
    backoff = Backoff(base_s=1.0, max_s=8.0, rng=random.Random(7))
    waits = [backoff.failed(100.0) for _ in range(6)]
    for n, wait in enumerate(waits, start=1):
        full = min(8.0, 2.0 ** (n - 1))
        assert full / 2 <= wait <= full, (n, wait)
    assert len(set(waits)) == 6  # jittered: no two agents' schedules line up
    assert backoff.failures == 6 and backoff.not_before == pytest.approx(100.0 + waits[-1])
    assert not backoff.ready(100.0 + waits[-1] - 0.01) and backoff.ready(backoff.not_before)
    backoff.succeeded()
    assert backoff.failures == 0
    assert 0.5 <= backoff.failed(200.0) <= 1.0  # the first wait again


def test_a_lowered_cap_and_retry_now():
    backoff = Backoff(base_s=1.0, max_s=30.0, rng=random.Random(1))
    for _ in range(5):
        backoff.failed(0.0)
    assert 15.0 <= backoff.failed(0.0) <= 30.0  # sixth failure: 32 s capped to 30, jittered
    assert 0.5 <= backoff.failed(0.0, cap_s=1.0) <= 1.0  # a flush waits at most a second
    backoff.retry_now()
    assert backoff.ready(0.0) and backoff.failures == 7  # the count stays


def test_the_clients_drain_waits_as_before():
    """The node agent's drain kept its schedule: 1–2 s first, doubling to `backoff_max_s`."""
    client = Client("http://127.0.0.1:9", "t", backoff_max_s=60.0)
    try:
        waits = [client.backoff.failed(0.0) for _ in range(7)]
        for n, wait in enumerate(waits, start=1):
            assert min(60.0, 2.0**n) / 2 <= wait <= min(60.0, 2.0**n), (n, wait)
        assert client.failures == 7 and client.not_before == waits[-1]
    finally:
        client.close()
