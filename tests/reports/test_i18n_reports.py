"""The report pages in Chinese (docs/pages.md, Language): no English a Chinese reader would
see but the page's own data; their Plotly figures titled in Chinese; the weekly PDF in
Chinese with a CJK font embedded, or in English saying why (docs/operations.md, Languages);
e-mails in the site's language (KUAE_LANGUAGE)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from django.core import mail
from django.utils import timezone, translation

from apps.common.weeks import last_complete_week
from apps.fleet.models import Cluster, Node
from apps.incidents.models import Incident
from apps.jobs.models import Job, JobPhase
from apps.reports import pdf_fonts
from apps.reports.services import weekly_report_send
from tests.i18n_check import visible_english
from tests.support import simulate

pytestmark = pytest.mark.django_db
ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}
CJK = re.compile(r"[\u4e00-\u9fff]")

# Words on these pages that come from templates and labels the other translation parts
# own (the header's pipeline banner, node states and tiles, incident categories and
# statuses, the repairs panel, relative times): their own tests read them. Remove a word
# here once its part is merged and translated.


@pytest.fixture(scope="module")
def simulated(module_rows) -> None:  # noqa: ANN001
    """The simulated cluster, written once for the module (tests/conftest.py)."""
    module_rows(simulate, gpus=128, days=10, seed=5)


@pytest.fixture
def sim(db, simulated) -> None:  # noqa: ANN001
    """Each test reads it inside its own transaction."""


@pytest.fixture
def browser(client, users):  # noqa: ANN001
    client.force_login(users["mia"])
    return client


def data_words() -> list[str]:
    """The simulated cluster's own names: hosts, racks, jobs and their phases, incidents."""
    words = ["kuae-sim", "mia"]
    for node in Node.objects.all():
        words += [node.hostname, node.rack, node.state_reason]  # why, as it was written
    words += list(Job.objects.values_list("name", flat=True))
    words += list(Job.objects.values_list("model_name", flat=True))
    words += list(JobPhase.objects.values_list("name", flat=True).distinct())
    words += list(Incident.objects.values_list("title", flat=True))
    return words


PAGES = [
    "/?cluster=kuae-sim",
    "/reports/weekly/?cluster=kuae-sim",
    "/reliability/?cluster=kuae-sim",
    "/reports/trends/?cluster=kuae-sim",
    "/gpus/?cluster=kuae-sim",
]


@pytest.mark.parametrize("url", PAGES)
def test_report_pages_show_no_english(browser, sim, url: str) -> None:
    response = browser.get(url, **ZH)
    assert response.status_code == 200
    words = visible_english(response.content.decode(), data_words())  # the whole page
    assert words == [], " ".join(words)


def figures(html: str) -> dict[str, dict]:
    """The Plotly figures a page carries as JSON (`json_script`), by their id."""
    found = re.findall(r'<script id="([\w-]+-data)" type="application/json">(.*?)</script>', html)
    return {key: json.loads(text) for key, text in found}


def titles(figure: dict) -> list[str]:
    """Every axis title of a figure's layout, and its trace names."""
    layout = figure["layout"]
    out = [
        axis["title"]["text"]
        for key, axis in layout.items()
        if key.startswith(("xaxis", "yaxis")) and isinstance(axis, dict) and "title" in axis
    ]
    return out + [t["name"] for t in figure["data"] if t.get("name")]


@pytest.mark.parametrize(
    ("url", "keys", "english"),
    [
        ("/reports/weekly/?cluster=kuae-sim", {"waterfall-data"}, "GPU-hours"),
        (
            "/reliability/?cluster=kuae-sim",
            {"trend-data", "recovery-data", "pareto-data"},
            "cluster MTBF",
        ),
    ],
)
def test_figures_are_titled_in_chinese(
    browser, sim, url: str, keys: set[str], english: str
) -> None:
    found = figures(browser.get(url, **ZH).content.decode())
    assert keys <= set(found)
    for key in keys:
        words = titles(found[key])
        assert words, key
        assert all(CJK.search(w) or w in ("MTTR",) for w in words), (key, words)
    in_english = figures(browser.get(url, HTTP_ACCEPT_LANGUAGE="en").content.decode())
    assert english in json.dumps(in_english)


@pytest.mark.parametrize(
    "chart", ["effective.json", "mfu.json", "availability.json", "checkpoints.json"]
)
def test_chart_endpoints_answer_in_chinese(browser, sim, chart: str) -> None:
    figure = browser.get(f"/charts/reports/{chart}?cluster=kuae-sim&days=30", **ZH).json()
    text = json.dumps(figure["layout"], ensure_ascii=False) + json.dumps(
        [t.get("name", "") for t in figure["data"]], ensure_ascii=False
    )
    assert CJK.search(text), chart


def pdf_text(pdf: bytes, tmp_path: Path) -> tuple[str, str]:
    """(the text pdftotext reads, the fonts pdffonts lists) of a PDF."""
    path = tmp_path / "weekly.pdf"
    path.write_bytes(pdf)
    text = subprocess.run(
        ["pdftotext", "-enc", "UTF-8", str(path), "-"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    fonts = subprocess.run(
        ["pdffonts", str(path)], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    return text, fonts


needs_poppler = pytest.mark.skipif(
    not (shutil.which("pdftotext") and shutil.which("pdffonts")),
    reason="poppler-utils (pdftotext, pdffonts) is not installed",
)


@needs_poppler
def test_the_chinese_pdf_embeds_a_cjk_font(browser, sim, tmp_path: Path) -> None:
    if pdf_fonts.cjk_font_path() is None:
        pytest.skip("no CJK font on this machine (Debian: fonts-wqy-microhei; CI installs it)")
    response = browser.get("/reports/weekly.pdf?cluster=kuae-sim", **ZH)
    assert response.status_code == 200 and response["Content-Type"] == "application/pdf"
    text, fonts = pdf_text(response.content, tmp_path)
    assert "周报 - kuae-sim" in text
    assert "有效训练率" in text and "GPU 小时的去向" in text
    embedded = [line for line in fonts.splitlines()[2:] if line.split()]
    cjk = [line for line in embedded if "WenQuanYi" in line or "CJK" in line or "Hei" in line]
    assert cjk, fonts
    assert all(" yes " in line for line in cjk), fonts  # emb: yes
    assert "\ufffd" not in text and "?" * 3 not in text


@needs_poppler
def test_without_a_cjk_font_the_pdf_is_english_and_says_why(
    browser, sim, tmp_path: Path, settings
) -> None:
    settings.KUAE_PDF_CJK_FONT = str(tmp_path / "missing.ttc")
    response = browser.get("/reports/weekly.pdf?cluster=kuae-sim", **ZH)
    assert response.status_code == 200
    text, _fonts = pdf_text(response.content, tmp_path)
    assert "Weekly report - kuae-sim" in text
    assert "No font with Chinese glyphs" in text and "KUAE_PDF_CJK_FONT" in text
    assert not CJK.search(text)


def test_the_english_pdf_is_unchanged(browser, sim, tmp_path: Path) -> None:
    if not shutil.which("pdftotext"):
        pytest.skip("poppler-utils is not installed")
    response = browser.get("/reports/weekly.pdf?cluster=kuae-sim", HTTP_ACCEPT_LANGUAGE="en")
    text = subprocess.run(
        ["pdftotext", "-", "-"],
        input=response.content,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()
    assert "Weekly report - kuae-sim" in text and "Where the GPU-hours went" in text


def test_a_font_without_chinese_glyphs_is_no_cjk_font(settings, tmp_path: Path) -> None:
    bogus = tmp_path / "not-a-font.ttf"
    bogus.write_bytes(b"not a font")
    assert not pdf_fonts.has_glyphs(bogus)
    settings.KUAE_PDF_CJK_FONT = str(bogus)
    assert pdf_fonts.cjk_font_path() is None


def test_the_weekly_mail_is_in_the_site_language(sim, settings) -> None:
    cluster = Cluster.objects.get(name="kuae-sim")
    now = timezone.now()
    settings.KUAE_REPORT_EMAILS = ["managers@example.com"]
    settings.KUAE_LANGUAGE = "zh-hans"
    with translation.override("en-gb"):  # whatever the worker's language, the site's wins
        assert weekly_report_send(cluster=cluster, start=last_complete_week(now), now=now)
    message = mail.outbox[-1]
    assert "周报" in message.subject and "有效训练率" in message.body
    assert message.attachments[0][0].endswith(".zip")
