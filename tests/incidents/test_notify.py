"""New sev1/sev2 incidents page people: e-mail and an optional webhook, from a task."""

from __future__ import annotations

import http.server
import json
import threading

import pytest
from django.core import mail

from apps.incidents.tasks import notify_incident

pytestmark = pytest.mark.django_db

BODY = {
    "title": "XID 79 on gpu001",
    "cluster": "c1",
    "category": "gpu",
    "severity": "sev1",
    "interrupts_job": True,
    "planned": False,
    "nodes": ["gpu001"],
}


class _Hook(http.server.BaseHTTPRequestHandler):
    received: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802
        type(self).received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_a_new_sev1_is_mailed_and_posted(api, nodes, settings, django_capture_on_commit_callbacks):
    from django.utils import timezone

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    settings.KUAE_NOTIFY_WEBHOOK = f"http://127.0.0.1:{server.server_address[1]}/hook"
    settings.KUAE_NOTIFY_EMAILS = ["oncall@example.com"]
    try:
        with django_capture_on_commit_callbacks(execute=False) as queued:
            pk = (
                api("erin")
                .post(
                    "/api/v1/incidents/",
                    {**BODY, "detected_at": timezone.now().isoformat()},
                    format="json",
                )
                .json()["id"]
            )
        assert len(queued) == 1  # the task is sent when the incident is committed
        notify_incident(pk)  # what the worker runs
    finally:
        server.shutdown()
        server.server_close()
    assert len(mail.outbox) == 1 and mail.outbox[0].subject == "[SEV1] XID 79 on gpu001"
    assert "gpu001" in mail.outbox[0].body and mail.outbox[0].to == ["oncall@example.com"]
    assert _Hook.received[-1]["id"] == pk and _Hook.received[-1]["severity"] == "sev1"


def test_history_and_low_severity_do_not_page(api, nodes, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as queued:
        api("erin").post(
            "/api/v1/incidents/", {**BODY, "detected_at": "2026-01-01T00:00:00Z"}, format="json"
        )
        api("erin").post(
            "/api/v1/incidents/",
            {**BODY, "severity": "sev3", "detected_at": "2026-11-30T00:00:00Z"},
            format="json",
        )
    assert queued == []
