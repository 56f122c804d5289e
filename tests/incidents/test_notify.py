"""New sev1/sev2 incidents page people: an e-mail and an optional webhook, each its own
delivery — claimed once, retried alone, so a failing webhook never re-sends the e-mail."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from django.core import mail
from django.utils import timezone

from apps.incidents.models import Delivery
from apps.incidents.tasks import delivery_send_task
from tests.support import LoopbackServer, QuietHandler

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


class _Hook(QuietHandler):
    """A webhook receiver that answers 500 to its first `failures` posts, then 204."""

    failures = 0
    received: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        cls = type(self)
        if cls.failures > 0:
            cls.failures -= 1
            self.send_response(500)
        else:
            cls.received.append(body)
            self.send_response(204)
        self.end_headers()


@pytest.fixture
def hook(settings) -> Iterator[type[_Hook]]:  # noqa: ANN001
    _Hook.failures, _Hook.received = 0, []
    with LoopbackServer(_Hook) as server:
        settings.KUAE_NOTIFY_WEBHOOK = f"{server.url}/hook"
        settings.KUAE_NOTIFY_EMAILS = ["oncall@example.com"]
        settings.KUAE_BASE_URL = "https://ops.example"
        yield _Hook


def _file(api, django_capture_on_commit_callbacks) -> tuple[int, list]:  # noqa: ANN001
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = api("erin").post(
            "/api/v1/incidents/", {**BODY, "detected_at": timezone.now().isoformat()}, format="json"
        )
    return response.json()["id"], queued


def test_a_new_sev1_is_mailed_and_posted_with_a_link_to_its_page(
    api, nodes, hook, django_capture_on_commit_callbacks
):
    pk, queued = _file(api, django_capture_on_commit_callbacks)
    assert len(queued) == 2  # one task per channel, sent when the incident commits
    for delivery in Delivery.objects.filter(incident_id=pk):
        assert delivery_send_task(delivery.pk) is True  # what the worker runs
    assert len(mail.outbox) == 1 and mail.outbox[0].subject == "[SEV1] XID 79 on gpu001"
    assert "gpu001" in mail.outbox[0].body and mail.outbox[0].to == ["oncall@example.com"]
    assert f"https://ops.example/incidents/{pk}/" in mail.outbox[0].body
    assert "/api/" not in mail.outbox[0].body
    (posted,) = hook.received
    assert posted["id"] == pk and posted["url"] == f"https://ops.example/incidents/{pk}/"
    assert set(Delivery.objects.values_list("channel", "status", "attempts")) == {
        ("email", "sent", 1),
        ("webhook", "sent", 1),
    }


def test_a_webhook_that_fails_once_is_retried_alone_and_the_mail_goes_once(
    api, nodes, hook, django_capture_on_commit_callbacks
):
    hook.failures = 1
    pk, _ = _file(api, django_capture_on_commit_callbacks)
    email = Delivery.objects.get(incident_id=pk, channel="email")
    webhook = Delivery.objects.get(incident_id=pk, channel="webhook")
    assert delivery_send_task(email.pk) is True
    with pytest.raises(Exception, match="500"):
        delivery_send_task(webhook.pk)  # Celery retries the task with backoff
    webhook.refresh_from_db()
    assert (webhook.status, webhook.attempts) == ("failed", 1) and "500" in webhook.error
    assert delivery_send_task(webhook.pk) is True  # the retry
    # The e-mail task running again (a worker lost after sending) sends nothing.
    assert delivery_send_task(email.pk) is False and delivery_send_task(webhook.pk) is False
    assert len(mail.outbox) == 1 and len(hook.received) == 1
    webhook.refresh_from_db()
    assert (webhook.status, webhook.attempts, webhook.error) == ("sent", 2, "")


def test_history_and_low_severity_do_not_page(api, nodes, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as queued:
        api("erin").post(
            "/api/v1/incidents/", {**BODY, "detected_at": "2026-01-01T00:00:00Z"}, format="json"
        )
        api("erin").post(
            "/api/v1/incidents/",
            {**BODY, "severity": "sev3", "detected_at": timezone.now().isoformat()},
            format="json",
        )
    assert queued == [] and not Delivery.objects.exists()
