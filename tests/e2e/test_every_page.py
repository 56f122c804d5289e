"""Every page as every role, the way issue 18 is judged, in real Chromium: at 1440 px (light
and dark) and on a 390-px phone, no page scrolls sideways, axe-core finds no serious or
critical violation, nothing errors in the console, no request leaves the app, and in dark
mode every chart is drawn on the dark palette."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import timezone

from apps.accounts.services import user_create_or_update
from apps.fleet.models import Node
from apps.incidents.models import Incident
from apps.jobs.models import Job
from apps.maintenance.services import Booking, window_book
from tests.e2e.support import watch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE = Path(__file__).resolve().parent / "node_modules" / "axe-core" / "axe.min.js"
SCAN = """() => axe.run(document, {resultTypes: ['violations']}).then(r => r.violations
  .filter(v => v.impact === 'serious' || v.impact === 'critical')
  .map(v => v.id + ' (' + v.impact + '): '
    + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', ')))"""
WIDE = "() => [document.documentElement.scrollWidth, window.innerWidth]"
# Each drawn chart's paper and the page's background, as Plotly and the CSS hold them.
CHARTS = """() => [...document.querySelectorAll('.js-plotly-plot')]
  .filter(p => p._fullLayout).map(p => p._fullLayout.paper_bgcolor)"""
MODES = {  # name: (viewport width, height, colour scheme)
    "desktop": (1440, 900, "light"),
    "phone": (390, 844, "light"),
    "dark": (1440, 900, "dark"),
}
# Every role at 1440 px and on a phone; the dark scheme (charts, contrast) is the same for
# every role, so one role walks it — the operator, who lives in the app all day.
ROLE_MODES = {
    "operator": ["desktop", "phone", "dark"],
    "engineer": ["desktop", "phone"],
    "manager": ["desktop", "phone"],
    "admin": ["desktop", "phone"],
}


def _axe() -> str:
    if not AXE.exists():
        reason = "axe-core is not installed (make test runs npm ci --prefix tests/e2e)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return AXE.read_text()


def _luminance(colour: str) -> float:
    """Relative brightness 0..1 of `#rrggbb`, `rgb(…)` or `rgba(…)` (transparent: 0)."""
    colour = colour.strip().lower()
    if colour.startswith("rgb"):
        parts = [float(p) for p in colour[colour.index("(") + 1 : -1].split(",")]
        if len(parts) == 4 and parts[3] == 0:
            return 0.0
        r, g, b = parts[:3]
    else:
        r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


def _pages(role: str) -> list[str]:
    node = Node.objects.order_by("hostname").first()
    job = Job.objects.order_by("id").first()
    incident = Incident.objects.order_by("id").first()
    start = timezone.now() + dt.timedelta(days=2)
    window = window_book(
        booking=Booking(
            cluster=node.cluster,
            start=start,
            end=start + dt.timedelta(hours=4),
            reason="firmware",
            nodes=[node.hostname],
        ),
        by="t",
    )
    pages = [
        "/",
        "/nodes/",
        f"/nodes/{node.hostname}/",
        "/gpus/",
        "/topology/",
        "/jobs/",
        f"/jobs/{job.pk}/",
        "/incidents/",
        "/action-items/",
        "/alerts/unrouted/",
        "/health/",
        "/reliability/",
        "/reports/weekly/",
        "/reports/trends/",
        "/maintenance/",
        f"/maintenance/{window.pk}/",
        "/repairs/",
        f"/search/?q={node.hostname[:4]}",
        "/api/docs/",
        "/no-such-page/",
    ]
    if incident is not None:
        pages += [f"/incidents/{incident.pk}/", f"/incidents/{incident.pk}/postmortem/"]
    if role in ("engineer", "admin"):
        pages.append("/incidents/new/")
    return pages


@pytest.mark.parametrize("role", ROLE_MODES)
def test_every_page_as_each_role_at_1440_and_on_a_phone(chromium, live_server, role):
    axe = _axe()
    call_command("simulate", gpus=64, days=7, seed=7)
    user_create_or_update(username="u", role=role, password="pw", check_password=False)
    pages = _pages(role)
    found: dict[str, list[str]] = {}
    for mode in ROLE_MODES[role]:
        width, height, scheme = MODES[mode]
        context = chromium.new_context(
            viewport={"width": width, "height": height}, color_scheme=scheme
        )
        # axe is served from the app's own origin: the pages' CSP allows only 'self' scripts
        context.route(
            live_server.url + "/__axe.js",
            lambda route: route.fulfill(body=axe, content_type="application/javascript"),
        )
        page = context.new_page()
        seen = watch(page, live_server.url)
        page.goto(live_server.url + "/login/")
        page.fill("#id_username", "u")
        page.fill("#id_password", "pw")
        page.click(".login button[type=submit]")  # not the header's language switch
        page.wait_for_selector("main")
        for url in pages:
            page.goto(live_server.url + url)
            page.wait_for_load_state("networkidle")  # charts and live parts drawn
            where = f"{mode} {url}"
            scroll, inner = page.evaluate(WIDE)
            if scroll > inner + 1:
                found.setdefault(where, []).append(f"{scroll} px wide in a {inner} px window")
            page.add_script_tag(url=live_server.url + "/__axe.js")
            found.setdefault(where, []).extend(page.evaluate(SCAN))
            if scheme == "dark":
                light = [c for c in page.evaluate(CHARTS) if _luminance(c) > 0.3]
                if light:
                    found.setdefault(where, []).append(f"charts on a light paper: {light}")
        # a 404 logs one console error (the page's own status): that one is expected
        errors = [e for e in seen.errors if "404" not in e]
        if errors or seen.outside:
            found[f"{mode} console/outside"] = errors + seen.outside
        context.close()
    found = {k: v for k, v in found.items() if v}
    assert not found, "\n".join(f"{where}: {what}" for where, what in found.items())
