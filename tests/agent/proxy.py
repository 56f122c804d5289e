"""An HTTP proxy in front of the live server whose failures a test chooses: `up` forwards,
`503` answers 503 without forwarding, `lost` forwards (the server stores) and answers 503
(the answer lost on its way back), `hang` holds the request past the client's timeout,
`refuse` closes the connection unanswered. Counts what each mode saw."""

from __future__ import annotations

import collections
import time

import httpx

from tests.support import LoopbackServer, QuietHandler, reply


class FaultyProxy(LoopbackServer):
    """`FaultyProxy(target).url`; set `.mode`; `.seen[mode]` counts requests per mode."""

    def __init__(self, target: str, hang_s: float = 3.0) -> None:
        self.target = target.rstrip("/")
        self.mode = "up"
        self.hang_s = hang_s
        self.seen: collections.Counter[str] = collections.Counter()
        self.forwarded_samples = 0  # samples in requests the server answered 2xx
        proxy = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
                mode = proxy.mode
                proxy.seen[mode] += 1
                if mode == "refuse":
                    self.close_connection = True
                    self.connection.close()
                    return
                if mode == "hang":
                    time.sleep(proxy.hang_s)
                    self.close_connection = True
                    return
                if mode == "503":
                    return reply(self, 503, b"{}", "application/json")
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() in ("authorization", "content-type")
                }
                with httpx.Client(timeout=30) as client:
                    answer = client.request(
                        self.command, proxy.target + self.path, content=body, headers=headers
                    )
                if answer.is_success and b'"samples"' in body:
                    proxy.forwarded_samples += body.count(b'"ts"')
                if mode == "lost":
                    return reply(self, 503, b"{}", "application/json")
                reply(self, answer.status_code, answer.content, "application/json")

            do_GET = do_POST = do_PATCH = _handle  # noqa: N815

        super().__init__(Handler)
