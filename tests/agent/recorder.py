"""A real HTTP server in-process that stands in for KUAE's agent endpoints where a test needs
no database: it records every request (method, path, query, JSON body, token) and answers
what the API answers — 202 to `POST jobs/{id}/ranks/` and `POST ingest/stalls/`, a job list
to `GET jobs/?external_id=`; a body that is not JSON (the node agent's Prometheus text) is
kept as text. `mode` = "503" answers 503 to everything, "refuse" closes the
connection unanswered (a server that is down)."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.support import LoopbackServer, QuietHandler, reply


@dataclass
class Request:
    """One request as the server saw it."""

    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    token: str
    at: float  # time.monotonic() when it arrived


class Recorder(LoopbackServer):
    """`Recorder().url`; set `.mode`; `.requests` holds what came, `.jobs` maps a Slurm id
    to the job id the lookup answers."""

    def __init__(self) -> None:
        self.mode = "up"
        self.requests: list[Request] = []
        self.jobs: dict[str, int] = {}
        self.lock = threading.Lock()
        recorder = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
                if recorder.mode == "refuse":
                    self.close_connection = True
                    self.connection.close()
                    return
                if recorder.mode == "503":
                    return self._answer(503, {})
                parts = urlsplit(self.path)
                body = _body(raw, self.headers.get("Content-Type", ""))
                token = self.headers.get("Authorization", "").removeprefix("Token ")
                with recorder.lock:
                    recorder.requests.append(
                        Request(
                            self.command,
                            parts.path,
                            parse_qs(parts.query),
                            body,
                            token,
                            time.monotonic(),
                        )
                    )
                if self.command == "GET" and parts.path == "/api/v1/jobs/":
                    slurm = parse_qs(parts.query).get("external_id", [""])[0]
                    found = recorder.jobs.get(slurm)
                    results = [{"id": found, "external_id": slurm}] if found else []
                    return self._answer(200, {"count": len(results), "results": results})
                if self.command == "POST" and parts.path.endswith("/ranks/"):
                    return self._answer(202, {"accepted": len(body["ranks"]), "attempt": 1})
                if self.command == "POST" and parts.path == "/api/v1/ingest/stalls/":
                    n = len(body["reports"]) if "reports" in body else 1
                    return self._answer(202, {"accepted": n})
                return self._answer(202, {})

            def _answer(self, code: int, content: Any) -> None:
                reply(self, code, json.dumps(content).encode(), "application/json")

            do_GET = do_POST = do_PATCH = _handle  # noqa: N815

        super().__init__(Handler, poll_interval=0.05)

    def posted(self, path_end: str) -> list[Any]:
        """The bodies of the POSTs whose path ends with `path_end`, in order."""
        with self.lock:
            posts = [r for r in self.requests if r.method == "POST"]
        return [r.body for r in posts if r.path.endswith(path_end)]

    def stalls(self) -> list[dict[str, Any]]:
        """Every stall report posted, one by one (batches unpacked)."""
        out: list[dict[str, Any]] = []
        for body in self.posted("/ingest/stalls/"):
            out.extend(body.get("reports", [body]))
        return out


def _body(raw: bytes, content_type: str) -> Any:
    """A request's JSON, or its text when it is sent as something else; None when empty."""
    if not raw:
        return None
    if content_type.startswith("text/"):
        return raw.decode(errors="replace")
    return json.loads(raw)
