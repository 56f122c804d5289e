"""The weekly PDF draws its charts as vector shapes and text (fpdf2, no image, no browser):
the waterfall from scheduled to productive GPU-hours in each cause's colour with the target,
the effective rate and cluster MTBF of the past weeks; weeks without data or failures say
so. Read back from the PDF's own content streams, and rendered to PNG where poppler is."""

from __future__ import annotations

import datetime as dt
import io
import os
import re
import shutil
import subprocess
import zlib
from pathlib import Path

import pytest
from django.utils import timezone
from fpdf import FPDF
from PIL import Image

from apps.common.charts import SERIES
from apps.common.weeks import WEEK, week_label, week_start
from apps.reports import pdf_charts
from apps.reports.choices import DOWNTIME_PARTS, LOSS_CAUSES, GpuHours
from apps.reports.export import weekly_pdf
from apps.reports.weekly import weekly_report, weekly_trends
from tests.support import simulate

RUN = re.compile(r"\(((?:[^()\\]|\\.)*)\) Tj")


def content(pdf: bytes) -> str:
    """Every compressed stream of the PDF, inflated (page contents, in order). Inflated by a
    decompressor object, which keeps what it read when the stream's last byte is a CR the
    `\r?\nendstream` split took (zlib.decompress refused such a stream as truncated)."""
    streams = re.findall(rb"stream\r?\n(.*?)\r?\nendstream", pdf, re.S)
    inflated = (zlib.decompressobj().decompress(s) for s in streams if s[:1] == b"x")
    return b"".join(inflated).decode("latin-1")


def runs(ops: str) -> list[str]:
    """The text drawn, one string per run, in order."""
    return [re.sub(r"\\(.)", r"\1", r) for r in RUN.findall(ops)]


def rect_fills(ops: str) -> set[tuple[int, int, int]]:
    """The colours of the filled rectangles (bars), as 0-255 RGB: the fill colour in force
    (`rg`, saved and restored by `q`/`Q`) at each `re f`."""
    fill, saved, seen = (0, 0, 0), [], set()
    for token in re.finditer(r"([\d.]+ [\d.]+ [\d.]+) rg|\bq\b|\bQ\b|\bre f\b", ops):
        if token[1]:
            fill = tuple(round(float(v) * 255) for v in token[1].split())
        elif token[0] == "q":
            saved.append(fill)
        elif token[0] == "Q":
            fill = saved.pop()
        else:
            seen.add(fill)
    return seen


def follows(needles: list[str], haystack: list[str]) -> bool:
    """`needles` appear in `haystack` in this order (not necessarily together)."""
    it = iter(haystack)
    return all(any(n == h for h in it) for n in needles)


@pytest.fixture(scope="module")
def simulated(module_rows) -> None:  # noqa: ANN001
    """The simulated cluster, written once for the module (tests/conftest.py)."""
    module_rows(simulate, gpus=256, days=24, seed=3, failure_rate=0.05)


@pytest.fixture
def sim(db, simulated) -> None:  # noqa: ANN001
    """Each test reads it inside its own transaction."""


@pytest.mark.django_db
def test_weekly_pdf_has_the_waterfall_and_the_trend_charts(client, users, sim) -> None:
    client.force_login(users["mia"])
    last = week_start(timezone.now()) - WEEK
    pdf = client.get(f"/reports/weekly.pdf?week={week_label(last)}").content
    ops = content(pdf)
    text = runs(ops)
    assert follows(
        [
            "Where the GPU-hours went",
            "Scheduled",
            "Failure",
            "downtime",
            "Planned",
            "downtime",
            "Rework since",
            "checkpoint",
            "Checkpoint",
            "blocking",
            "Productive",
            "Effective training rate by week",
            "Cluster MTBF by week (hours)",
            "Where the failure downtime went",
            "Detecting",
            "(failure -> detected)",
            "Localising",
            "Mitigating",
            "Restarting",
            "Time in the run not spent training (not part of the effective rate)",
            "Jobs (costliest first: by lost GPU-hours)",
        ],
        text,
    ), text
    assert follows(
        [
            "Effective training rate",
            "Time in the run not spent training (GPU-hours)",
            "MTTR (minutes)",
            "Recovery, median (minutes)",
            "Recovery, 90th percentile (minutes)",
            "Recovery, longest (minutes)",
        ],
        text,
    ), text
    assert "rework" not in text and "planned" not in text  # never a slug on its own
    notes = [t for t in text if t.startswith("Dashed: the target")]
    assert notes == ["Dashed: the target, >= 99%", "Dashed: the target, >= 15 d (360 h)"]
    assert any("Dashed: the target, effective rate >= 99%" in t for t in text)
    weeks = [week_label(last - k * WEEK)[5:] for k in range(3)]  # W47, W46, W45…
    assert all(sum(t.startswith(w) for t in text) >= 2 for w in weeks), weeks  # both trends
    # Bars in each cause's colour and the productive green; the MTBF bars in the series blue.
    fills = rect_fills(ops)
    expected = {pdf_charts.rgb(c.colour) for c in (*LOSS_CAUSES, GpuHours.PRODUCTIVE)}
    assert expected <= fills, fills
    # One bar per part of the failure downtime, in its colour, for each part with any.
    report = client.get(f"/api/v1/reports/weekly/?week={week_label(last)}").json()
    parts = report["downtime_breakdown_gpu_hours"]
    assert sum(parts.values()) == pytest.approx(report["lost_gpu_hours"]["downtime"], rel=1e-12)
    assert parts["restart"] > 0, "the simulated week should have failure downtime"
    drawn = {p.value for p in DOWNTIME_PARTS if pdf_charts.rgb(p.colour) in fills}
    assert drawn == {p for p, hours in parts.items() if hours > 0}
    for part, hours in parts.items():
        share = 100 * hours / report["lost_gpu_hours"]["downtime"]
        assert f"{hours:,.1f} GPU-h  {share:.1f}% of downtime" in text, part
    assert pdf_charts.rgb(SERIES["mfu"]) in fills
    assert re.search(r"\[[\d.]+ [\d.]+\] [\d.]+ d\n[\d.]+ ([\d.]+) m [\d.]+ \1 l S", ops)  # target
    assert re.search(r"[\d.]+ [\d.]+ m\n(?:[\d.]+ [\d.]+ l\n){2,}\s*S", ops)  # the rate's line


def test_weeks_without_data_or_failure_say_so() -> None:
    pdf = FPDF(format="A4")
    pdf.add_page()
    weeks = [
        {"week": "2026-W01", "complete": True, "mtbf_hours": None, "node_days": 0.0},
        {"week": "2026-W02", "complete": True, "mtbf_hours": None, "node_days": 448.0},
        {"week": "2026-W03", "complete": False, "mtbf_hours": 84.0, "node_days": 448.0},
    ]
    pdf_charts.mtbf_trend(pdf, pdf_charts.Box(10, 10, 90, 58), weeks, 360.0)
    rates = [
        {"week": "2026-W01", "complete": True, "scheduled_gpu_hours": 0.0, "effective_rate": None},
        {"week": "2026-W02", "complete": True, "scheduled_gpu_hours": 9.0, "effective_rate": 0.97},
        {"week": "2026-W03", "complete": True, "scheduled_gpu_hours": 9.0, "effective_rate": 0.99},
    ]
    pdf_charts.effective_trend(pdf, pdf_charts.Box(110, 10, 90, 58), rates, 0.99)
    ops = content(bytes(pdf.output()))
    text = runs(ops)
    assert follows(
        ["W01 2026", "no", "data", "W02", "no", "failure", "W03", "so far", "84 h"], text
    )
    assert follows(["W01 2026", "no", "data", "W02", "97.00%", "W03", "99.00%"], text)
    assert "0 h" not in text and "0.00%" not in text
    assert len(rect_fills(ops)) == 1  # one bar: the week that had failures
    assert re.search(r" m\n[\d.]+ [\d.]+ l\n[\d.]+ [\d.]+ l\n h\n f", ops)  # no-failure mark


@pytest.mark.django_db
def test_a_cluster_without_jobs_gets_a_pdf_that_says_so(nodes) -> None:  # noqa: ANN001
    now = timezone.now()
    start = week_start(now)
    cluster = nodes[0].cluster
    report = weekly_report(cluster=cluster, start=start, now=now)
    trends = weekly_trends(cluster=cluster, start=start, now=now)
    assert trends["effective"] == [] and len(trends["reliability"]) == 8
    text = runs(content(weekly_pdf(report, None, trends)))
    assert "No job ran in this week." in text and "Cluster MTBF by week (hours)" in text


def test_nice_ticks() -> None:
    assert pdf_charts.nice_ticks(81_000, 86_000) == [80_000, 82_000, 84_000, 86_000]
    assert pdf_charts.nice_ticks(0, 430) == [0, 200, 400, 600]
    assert pdf_charts.nice_ticks(0.965, 1.0, 5) == pytest.approx([0.96, 0.97, 0.98, 0.99, 1.0])
    assert pdf_charts.latin("≥ 15 d − 2 – 3") == ">= 15 d - 2 - 3"
    assert pdf_charts.latin("failure → detected") == "failure -> detected"


@pytest.mark.django_db
def test_the_pdf_renders_its_charts(client, users, sim, tmp_path: Path) -> None:
    if not shutil.which("pdftoppm"):
        if os.environ.get("CI"):
            pytest.fail("CI needs pdftoppm (.ci/run installs poppler-utils)")
        pytest.skip("no pdftoppm here (apt-get install poppler-utils)")
    client.force_login(users["mia"])
    last = week_label(week_start(timezone.now()) - dt.timedelta(weeks=1))
    (tmp_path / "w.pdf").write_bytes(client.get(f"/reports/weekly.pdf?week={last}").content)
    subprocess.run(
        ["pdftoppm", "-r", "60", "-f", "1", "-l", "1", "-png", "w.pdf", "page"],
        cwd=tmp_path,
        check=True,
    )
    [png] = tmp_path.glob("page*.png")
    image = Image.open(io.BytesIO(png.read_bytes())).convert("RGB")
    seen = {colour for _, colour in image.getcolors(maxcolors=1 << 22) or []}
    for colour in (GpuHours.PRODUCTIVE.colour, GpuHours.PLANNED.colour, SERIES["mfu"]):
        r, g, b = pdf_charts.rgb(colour)
        assert any(abs(r - x) + abs(g - y) + abs(b - z) < 12 for x, y, z in seen), colour
