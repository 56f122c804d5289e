"""The charts' range buttons on the job page and the trends page put the range in the
address (`?range=7d`, as the node page's range links do), so the view can be shared and a
reload keeps it (docs/pages.md, Charts)."""

from __future__ import annotations

import time

import pytest

from apps.accounts.services import user_create_or_update
from apps.jobs.models import Job
from tests.e2e.support import sign_in, watch
from tests.support import simulate

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# The x range each chart shows, in days (Plotly's date strings, read in the page).
SPANS = """() => [...document.querySelectorAll('.js-plotly-plot')]
  .filter((el) => el.querySelector('.rangeselector'))
  .map((el) => { const r = el._fullLayout.xaxis.range;
    const t = (v) => Date.parse(String(v).replace(' ', 'T') + 'Z');
    return (t(r[1]) - t(r[0])) / 86400000; })"""


def ranged(page, count: int, timeout: float = 20.0) -> list[float]:  # noqa: ANN001
    """Wait until `count` charts with range buttons are drawn; their spans in days."""
    deadline = time.monotonic() + timeout
    while page.locator(".js-plotly-plot .rangeselector").count() < count:
        assert time.monotonic() < deadline, "the charts never drew their range buttons"
        time.sleep(0.2)
    time.sleep(0.5)
    return page.evaluate(SPANS)


def test_range_buttons_put_the_range_in_the_url_and_a_reload_keeps_it(chromium, live_server):
    simulate(gpus=128, days=10, seed=7, failure_rate=0.0)
    user_create_or_update(username="mia", role="manager", password="pw-mia", check_password=False)
    job = Job.objects.order_by("started_at").first()
    assert job is not None
    context = chromium.new_context(viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    seen = watch(page, live_server.url)
    sign_in(page, live_server.url, "mia", "pw-mia")

    page.goto(f"{live_server.url}/jobs/{job.pk}/")
    whole = ranged(page, 1)[0]
    assert whole > 1.5, whole  # the job ran for days: "all" is wider than a day
    page.locator(".rangeselector .button", has_text="24 h").first.click()
    page.wait_for_url(f"**/jobs/{job.pk}/?range=24h")
    assert ranged(page, 1)[0] == pytest.approx(1.0, abs=0.01)
    page.reload()
    assert page.url.endswith("?range=24h")
    assert ranged(page, 1)[0] == pytest.approx(1.0, abs=0.01)  # the reload kept it
    page.locator(".rangeselector .button", has_text="all").first.click()
    page.wait_for_url(f"**/jobs/{job.pk}/")
    assert "range=" not in page.url

    page.goto(f"{live_server.url}/reports/trends/?days=14")
    assert len(ranged(page, 2)) == 2
    page.locator(".rangeselector .button", has_text="7 d").first.click()
    page.wait_for_url("**/reports/trends/?days=14&range=7d")
    assert ranged(page, 2) == [pytest.approx(7.0, abs=0.01)] * 2  # both charts follow
    page.goto(f"{live_server.url}/reports/trends/?days=14&range=6h")  # a shared link
    assert ranged(page, 2) == [pytest.approx(0.25, abs=0.01)] * 2
    context.close()
    seen.assert_clean()
