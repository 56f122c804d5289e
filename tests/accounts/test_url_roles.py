"""Every URL pattern, every role: the allow/deny of docs/api.md, Conventions, written out here by
hand (not read from the views), so a view that forgets its check fails this test."""

from __future__ import annotations

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from apps.accounts.services import token_issue

pytestmark = pytest.mark.django_db

ANON, M, OP, E, A, ADM = None, "mia", "otto", "erin", "ada", "root"
EVERYONE = {ANON, M, OP, E, A, ADM}
READ = {M, OP, E, ADM}
OPS = {OP, E, ADM}
ENG = {E, ADM}
AGENT = {A, ADM}
ADMIN = {ADM}
LAUNCH = {OP, E, A, ADM}  # operators create/update jobs; agents register their run

# url name → {method: who may}. Pages and endpoints alike.
EXPECTED: dict[str, dict[str, set]] = {
    "healthz": {"GET": EVERYONE},
    "readyz": {"GET": EVERYONE},
    "colours-css": {"GET": EVERYONE},
    "login": {"GET": EVERYONE},
    # OpenID Connect sign-in, for everyone (404 unless configured: tests/oidc)
    "oidc_authentication_init": {"GET": EVERYONE},
    "oidc_authentication_callback": {"GET": EVERYONE},
    "metrics": {"GET": ADMIN},
    "api-docs": {"GET": READ},
    "api-schema": {"GET": READ},
    "api-cluster-list": {"GET": READ, "POST": ADMIN},
    "api-cluster-detail": {"GET": READ, "PATCH": ADMIN},
    "api-cluster-automation": {"POST": OPS},
    "api-actuation-list": {"GET": READ},
    "api-node-list": {"GET": READ, "POST": OPS},
    "api-node-detail": {"GET": READ},
    "api-node-host": {"GET": READ},
    "api-node-topology": {"POST": OPS},
    "api-node-state": {"POST": OPS},
    "api-node-heartbeat": {"POST": AGENT},
    "api-ingest-telemetry": {"POST": AGENT},
    "api-ingest-prometheus": {"POST": AGENT},
    "api-ingest-events": {"POST": AGENT},
    "api-ingest-slurm": {"POST": AGENT},
    "api-ingest-alertmanager": {"POST": AGENT},
    "api-ingest-stalls": {"POST": AGENT},
    "api-alerts-unrouted": {"GET": READ},
    "api-job-list": {"GET": READ | AGENT, "POST": LAUNCH},  # an agent: its job's id by Slurm id
    "api-job-detail": {"GET": READ, "PATCH": LAUNCH},
    "api-job-metrics": {"GET": READ, "POST": AGENT},
    "api-job-checkpoints": {"GET": READ, "POST": AGENT},
    "api-job-preflight": {"POST": LAUNCH},
    "api-job-ranks": {"GET": READ, "POST": LAUNCH},  # a launcher may register its ranks
    "api-job-phases": {"GET": READ, "POST": LAUNCH},  # operators may back-fill phases
    "api-node-admission": {"GET": READ | AGENT},  # kuae-agent prolog: about its own node
    "api-incident-list": {"GET": READ, "POST": ENG},
    "api-incident-detail": {"GET": READ, "PATCH": OPS},
    "api-incident-ack": {"POST": OPS},
    "api-postmortem": {"GET": READ, "PUT": ENG},
    "api-postmortem-submit": {"POST": ENG},
    "api-postmortem-approve": {"POST": ENG},
    "api-postmortem-reject": {"POST": ENG},
    "api-health-run": {"POST": OPS},
    "api-health-runs": {"GET": READ},
    "api-health-run-detail": {"GET": READ},
    "api-health-results": {"GET": READ},
    "api-pipeline": {"GET": READ},
    "api-reliability": {"GET": READ},
    "api-weekly": {"GET": READ},
    "api-availability": {"GET": READ},
    "overview": {"GET": READ},
    "reliability": {"GET": READ},
    "weekly-report": {"GET": READ},
    "weekly-download": {"GET": READ},
    "trends": {"GET": READ},
    "job-effective": {"GET": READ},
    "job-incidents": {"GET": READ},
    "job-ranks": {"GET": READ},
    "chart-mfu": {"GET": READ},
    "chart-availability": {"GET": READ},
    "chart-availability-heatmap": {"GET": READ},
    "chart-effective": {"GET": READ},
    "chart-checkpoints": {"GET": READ},
    "chart-job-progress": {"GET": READ},
    "chart-node-telemetry": {"GET": READ},
    "chart-node-gpus": {"GET": READ},  # per-GPU charts (issue 15, item 2)
    "chart-node-ports": {"GET": READ},  # per-port charts (issue 27, item 3)
    "gpu-fleet": {"GET": READ},  # hottest, least utilised, throttled GPUs
    "node-list": {"GET": READ},
    "node-detail": {"GET": READ},
    "node-topology": {"GET": READ},
    "node-state": {"POST": OPS},
    "job-list": {"GET": READ},
    "job-detail": {"GET": READ},
    "health": {"GET": READ},
    "health-run": {"POST": OPS},
    "health-summary": {"GET": READ},
    "pipeline-banner": {"GET": READ},
    "health-thresholds": {"POST": OPS},
    "health-node-evidence": {"GET": READ},
    "health-job-suspects": {"GET": READ},
    "incident-list": {"GET": READ},
    "incident-new": {"GET": ENG, "POST": ENG},
    "incident-detail": {"GET": READ},
    "incident-edit": {"POST": OPS},
    "incident-ack": {"POST": OPS},
    "cluster-automation": {"POST": OPS},
    "incident-take": {"POST": OPS},
    "incident-comment": {"POST": OPS},
    "postmortem": {"GET": READ, "POST": ENG},
    "postmortem-step": {"POST": ENG},
    "action-items": {"GET": READ},
    "unrouted-alerts": {"GET": READ},
    # maintenance windows (docs/maintenance.md): the calendar's booking form is for operators
    "maintenance": {"GET": READ},
    "maintenance-detail": {"GET": READ},
    "maintenance-end": {"POST": OPS},
    "api-maintenance-list": {"GET": READ, "POST": OPS},
    "api-maintenance-detail": {"GET": READ, "DELETE": OPS},
    # repairs (docs/repairs.md): engineers edit; operators return (skipping burn-in: engineers)
    "repairs": {"GET": READ},
    "repair-detail": {"GET": READ},
    "repair-step": {"POST": ENG},
    "repair-return": {"POST": OPS},
    "api-repair-list": {"GET": READ},
    "api-repair-detail": {"GET": READ, "PATCH": ENG},
    "api-node-return": {"POST": OPS},
    "search": {"GET": READ},  # the header's search box (issue 18, item 6)
    # the pages' language (docs/pages.md, Language): the switch and the scripts' catalogue
    # for everyone (the sign-in page has them), a person's own settings once signed in
    "set_language": {"POST": EVERYONE},
    "javascript-catalog": {"GET": EVERYONE},
    "my-settings": {"GET": READ | AGENT, "POST": READ | AGENT},
    # object level: the item's owner or an engineer (tests/incidents/test_postmortem_pages.py)
    "action-item-done": {"POST": READ},
}
ARGS = {"pk": 1, "hostname": "gpu000", "name": "c1", "step": "submit", "fmt": "csv", "item_id": 1}
NOT_PATTERNS = {"logout", None}  # sign-out is for everyone signed in; admin has its own


def _names(resolver: URLResolver) -> set:
    out = set()
    for p in resolver.url_patterns:
        if isinstance(p, URLResolver):
            if getattr(p, "app_name", None) != "admin":
                out |= _names(p)
        elif isinstance(p, URLPattern):
            out.add(p.name)
    return out


def test_every_url_pattern_is_in_the_table():
    assert _names(get_resolver()) - NOT_PATTERNS == set(EXPECTED)


def _url(name: str) -> str:
    """The pattern reversed with sample arguments for the parameters it takes."""
    possibilities = get_resolver().reverse_dict.getlist(name)[0][0]
    params = possibilities[0][1]
    return reverse(name, kwargs={k: ARGS[k] for k in params})


CASES = [(name, method) for name, methods in sorted(EXPECTED.items()) for method in methods]


@pytest.mark.parametrize(("name", "method"), CASES)
def test_roles_on_every_url(client, users, nodes, name, method):
    url = _url(name)
    allowed = EXPECTED[name][method]
    for persona in (ANON, M, OP, E, A, ADM):
        client.logout()
        headers = {}
        if persona is not None:
            if url.startswith("/api/v1/") and not url.startswith("/api/v1/schema"):
                headers["HTTP_AUTHORIZATION"] = f"Token {token_issue(user=users[persona])}"
            else:
                client.force_login(users[persona])
        send = getattr(client, method.lower())
        response = send(url, **headers) if method == "GET" else send(url, {}, **headers)
        status = response.status_code
        denied = status in (401, 403) or (
            status == 302 and "/login/" in response.get("Location", "")
        )
        if persona in allowed:
            assert not denied, f"{persona or 'anonymous'} refused {method} {url}: {status}"
            assert status < 500, f"{method} {url} as {persona}: {status}"
        else:
            assert denied, f"{persona or 'anonymous'} allowed {method} {url}: {status}"
            if persona is not None:
                assert status == 403, f"{persona} {method} {url}: {status} (want 403)"
