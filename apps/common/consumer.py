"""The Celery worker's consumer, surviving a broker restart while it holds a task
(docs/operations.md, Broker restarts). Set as `CELERY_WORKER_CONSUMER`.

On losing the broker, Celery 5.7's consumer collects the connection, and collecting lets
the transport forget the broker's address. A task received before the loss (late
acknowledgement, as here) still finishes afterwards and is acknowledged on its old
channel, and the channel's close hands unacknowledged tasks back: both ask the transport
for the address, meet AttributeError instead of a connection error, and the worker exits
with "Unrecoverable error" rather than reconnecting. This consumer gives the transport its
address back after the collect, so those calls reach the broker when it is back, or fail
as the connection errors Celery already handles while it is not.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from celery.worker.consumer import Consumer as CeleryConsumer
from kombu import Connection


def _collect_keeping_address(
    connection: Connection, collect: Callable[..., None], *args: Any, **kwargs: Any
) -> None:
    """Collect `connection`, then let its transport know the broker's address again."""
    transport = connection.transport
    try:
        collect(*args, **kwargs)
    finally:
        if transport.client is None:
            transport.client = connection


class Consumer(CeleryConsumer):
    """Celery's consumer whose lost connection keeps the broker's address, so a task
    finishing after the loss cannot end the worker."""

    def on_connection_error_after_connected(self, exc: Exception) -> None:
        """Celery's own handling, with the lost connection's transport keeping its address."""
        connection = self.connection
        if connection is not None:
            connection.collect = partial(_collect_keeping_address, connection, connection.collect)
        super().on_connection_error_after_connected(exc)
