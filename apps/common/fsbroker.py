"""The embedded default's broker: kombu's filesystem transport, with whole messages only.

kombu's filesystem channel creates a message's file in the queue folder and only then
writes it, so a worker polling the folder can take the file while it is still empty and
die on the JSON it cannot decode (seen under `make run`: the worker stopped and took the
dashboard down with it). Here a message is written under a name no queue reads and moved
into place with `os.replace`, which is atomic within one filesystem: a reader sees the
whole message or none. Everything else is kombu's own.
"""

from __future__ import annotations

import os
import uuid
from time import monotonic
from typing import Any

from kombu import transport as kombu_transport
from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    """A filesystem channel whose messages appear in the queue folder whole."""

    # kombu's filesystem channel names the parameter `payload`, its base `message`: this
    # keeps the filesystem channel's signature, which the base's callers pass positionally.
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        """Put `payload` onto `queue`: written aside, then renamed into the folder."""
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = os.path.join(self.data_folder_out, f".{name}.part")  # matches no queue
        try:
            with open(partial, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    """kombu's filesystem transport with `Channel` above."""

    Channel = Channel


def install() -> None:
    """Make `filesystem://` mean this transport in this process (kombu picks a transport by
    the URL's scheme through its alias table), so a Redis URL still means Redis."""
    kombu_transport.TRANSPORT_ALIASES["filesystem"] = f"{__name__}:Transport"
    kombu_transport._transport_cache.pop("filesystem", None)
