"""The `rest` connection: slurmrestd over HTTP(S) with a JWT (`X-SLURM-USER-TOKEN`), or over
a unix socket (`unix:/run/slurmrestd.sock`, local auth). The API version is discovered from
the server's own OpenAPI document, the newest it offers."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import httpx
from django.conf import settings

from apps.fleet.destinations import DestinationRefused, Unresolvable, slurmrestd_url_refusal
from apps.fleet.pinned import pinned_transport
from apps.scheduler.connection import SchedulerRefused, SchedulerUnavailable

_VERSION = re.compile(r"^/(slurm|slurmdb)/v(\d+)\.(\d+)\.(\d+)/")


def _version_key(path: str) -> tuple[int, int, int]:
    m = _VERSION.match(path)
    return (int(m[2]), int(m[3]), int(m[4])) if m else (-1, -1, -1)


class SlurmRest:
    """slurmrestd: `/slurm/vX/jobs`, `/slurmdb/vX/jobs`, `/slurm/vX/nodes`, and the node
    update of 23.02 and newer (22.05's API has none: drains need `cli` there)."""

    def __init__(self, *, url: str, token: str = "", timeout_s: float = 20.0) -> None:
        self.url = url
        headers = {"Accept": "application/json"}
        if token:
            headers["X-SLURM-USER-TOKEN"] = token
        if settings.KUAE_SLURM_USER:
            headers["X-SLURM-USER-NAME"] = settings.KUAE_SLURM_USER
        transport: httpx.BaseTransport
        if url.startswith("unix:"):
            transport = httpx.HTTPTransport(uds=url.removeprefix("unix:"))
            base = "http://slurmrestd"
        else:  # pinned: the address checked is the one connected to (apps/fleet/pinned.py)
            transport, base = pinned_transport(settings.KUAE_SCRAPE_ALLOW), url.rstrip("/")
        self._http = httpx.Client(
            base_url=base, transport=transport, headers=headers, timeout=timeout_s, trust_env=False
        )
        self._paths: dict[str, list[str]] | None = None

    def describe(self) -> str:
        """`slurmrestd <url>`."""
        return f"slurmrestd {self.url}"

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        refused = slurmrestd_url_refusal(self.url, settings.KUAE_SCRAPE_ALLOW)
        if refused:  # a row stored before the rule: the JWT is never sent there
            raise SchedulerUnavailable(f"slurmrestd {self.url}: refused: {refused}")
        try:
            response = self._http.request(method, path, **kwargs)
        except (DestinationRefused, Unresolvable) as exc:
            raise SchedulerUnavailable(f"slurmrestd {self.url}: refused: {exc}") from exc
        except httpx.HTTPError as exc:
            raise SchedulerUnavailable(
                f"slurmrestd {self.url}: {exc or type(exc).__name__}"
            ) from exc
        try:
            body = response.json()
        except ValueError:
            body = None
        errors = body.get("errors") if isinstance(body, dict) else None
        problems = [
            str(e.get("description") or e.get("error") or e)
            for e in errors or []
            if isinstance(e, dict) and e.get("error_number") != 9003  # 9003: nothing found
        ]
        if response.status_code >= 500 or response.status_code == 429:
            raise SchedulerUnavailable(
                f"slurmrestd {path}: HTTP {response.status_code} {'; '.join(problems)[:200]}"
            )
        if response.status_code >= 400 or body is None:
            detail = "; ".join(problems) or response.text[:200]
            raise SchedulerRefused(f"slurmrestd {path}: HTTP {response.status_code} {detail}")
        return body

    def _paths_by_kind(self) -> dict[str, list[str]]:
        if self._paths is None:
            doc = None
            for path in ("/openapi/v3", "/openapi"):  # 23.02+ / 22.05
                try:
                    doc = self._request("GET", path)
                    break
                except SchedulerRefused:
                    continue
            if not isinstance(doc, dict) or not isinstance(doc.get("paths"), dict):
                raise SchedulerRefused(f"slurmrestd {self.url} published no OpenAPI paths")
            self._paths = {}
            for path, methods in doc["paths"].items():
                if isinstance(methods, dict):
                    self._paths.setdefault(path, [m.lower() for m in methods])
        return self._paths

    def _newest(self, template: str, method: str = "get") -> str:
        """The newest version's path matching `template` (`/slurm/{v}/jobs`)."""
        pattern = re.compile(
            "^"
            + re.escape(template)
            .replace(r"\{v\}", r"v\d+\.\d+\.\d+")
            .replace(r"\{node\}", r"\{[a-z_]+\}")
            + "$"
        )
        found = [p for p, ms in self._paths_by_kind().items() if pattern.match(p) and method in ms]
        if not found:
            raise SchedulerRefused(
                f"slurmrestd {self.url} offers no {method.upper()} {template.replace('{v}', 'v…')}"
            )
        return max(found, key=_version_key)

    def jobs_active(self) -> Any:
        """`GET /slurm/vX/jobs`."""
        return self._request("GET", self._newest("/slurm/{v}/jobs"))

    def jobs_since(self, since: dt.datetime) -> Any:
        """`GET /slurmdb/vX/jobs?start_time=now-N&end_time=now` (Slurm's relative times need no
        time zone agreement)."""
        seconds = max(1, int((dt.datetime.now(dt.UTC) - since).total_seconds()))
        return self._request(
            "GET",
            self._newest("/slurmdb/{v}/jobs"),
            params={"start_time": f"now-{seconds}", "end_time": "now"},
        )

    def nodes(self) -> Any:
        """`GET /slurm/vX/nodes`."""
        return self._request("GET", self._newest("/slurm/{v}/nodes"))

    def _node_update(self, node: str, body: dict[str, Any]) -> None:
        template = self._newest("/slurm/{v}/node/{node}", method="post")
        # hostnames are DNS names (apps.common.hostnames): nothing to escape
        self._request("POST", template.rsplit("/", 1)[0] + "/" + node, json=body)

    def drain(self, node: str, reason: str) -> None:
        """`POST /slurm/vX/node/{name}` `{state: ["DRAIN"], reason}` (23.02+)."""
        self._node_update(node, {"state": ["DRAIN"], "reason": reason})

    def resume(self, node: str) -> None:
        """`POST /slurm/vX/node/{name}` `{state: ["RESUME"]}` (23.02+)."""
        self._node_update(node, {"state": ["RESUME"]})
