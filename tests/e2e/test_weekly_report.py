"""A manager in real Chromium opens the weekly report and the trends page: every chart
draws, the CSV, its ZIP of tables and the PDF download, nothing is fetched from outside the app."""

from __future__ import annotations

import csv

import pytest

from apps.accounts.services import user_create_or_update
from tests.e2e.support import sign_in, watch
from tests.reports.tables import tables
from tests.support import simulate

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_manager_reads_and_downloads_the_weekly_report(chromium, live_server, tmp_path):
    simulate(gpus=256, days=14, seed=5, failure_rate=0.05)
    user_create_or_update(username="mia", role="manager", password="pw-mia", check_password=False)
    context = chromium.new_context(viewport={"width": 1440, "height": 1000}, accept_downloads=True)
    page = context.new_page()
    seen = watch(page, live_server.url)

    sign_in(page, live_server.url, "mia", "pw-mia")
    page.click("nav >> text=Weekly report")
    page.wait_for_selector("text=Where the GPU-hours went")
    # The page opens on the last complete week, which 14 days of history cover whatever the
    # weekday (going back one more week, as this did, found an empty week on a Thursday).
    charts = page.locator(".chart")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.chart')].every(c => c.querySelector('.main-svg'))",
        timeout=20_000,
    )
    assert charts.count() >= 3
    assert page.locator(".waterfalllayer .point").count() == 6  # scheduled, 4 causes, productive
    # Where the failure downtime went: one bar per part, as long as its share — together
    # they fill one track (docs/formulas.md, Where the downtime went).
    assert page.locator(".part-bars tr").count() == 4
    widths = page.eval_on_selector_all(
        ".part-bars .bar", "bars => bars.map(b => b.getBoundingClientRect().width)"
    )
    track = page.eval_on_selector(".part-bars .track", "t => t.getBoundingClientRect().width")
    assert max(widths) > 0 and abs(sum(widths) - track) <= 0.03 * track, (widths, track)
    assert page.locator("dd[data-recovery=p50]").inner_text().endswith(" min")
    with page.expect_download() as csv_download:
        page.click("a.button >> text=Figures (CSV)")
    csv_path = tmp_path / csv_download.value.suggested_filename
    csv_download.value.save_as(csv_path)
    header, week, *more = csv_path.read_text().splitlines()
    # Every cell quoted (docs/operations.md, Limits).
    assert header.startswith('"cluster","week",') and week.startswith('"kuae-sim",') and not more
    with page.expect_download() as zip_download:
        page.click("a.button >> text=All tables (ZIP of CSV)")
    zip_path = tmp_path / zip_download.value.suggested_filename
    zip_download.value.save_as(zip_path)
    files = tables(zip_path.read_bytes())
    assert files["headline"][0]["week"] == next(csv.reader([week]))[1] and files["jobs"]
    with page.expect_download() as pdf_download:
        page.click("a.button >> text=PDF")
    pdf_path = tmp_path / pdf_download.value.suggested_filename
    pdf_download.value.save_as(pdf_path)
    assert pdf_path.read_bytes()[:5] == b"%PDF-"

    page.click("nav >> text=Trends")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.chart')].every(c => c.querySelector('.main-svg'))",
        timeout=30_000,
    )
    assert page.locator(".chart").count() == 5
    assert page.locator(".heatmaplayer image, .heatmaplayer .hm").count() >= 1
    context.close()
    seen.assert_clean()
