"""The weekly report as PDF (fpdf2), and its headline rows (the PDF's and the e-mail's): the
same figures as the page. The tidy CSV tables are `weekly_tables.py`."""

from __future__ import annotations

from typing import Any

from django.utils import translation
from django.utils.translation import gettext as _
from fpdf import FPDF
from fpdf.fonts import FontFace

from apps.reports import pdf_charts
from apps.reports.choices import LOSS_CAUSES
from apps.reports.downtime import downtime_parts
from apps.reports.pdf_fonts import NO_CJK_FONT, ReportPDF, cjk_font_path, family, fit
from apps.reports.targets import target_text


def _pct(value: float | None, digits: int = 2) -> str:
    return "" if value is None else f"{100 * value:.{digits}f}%"


def _num(value: float | None, digits: int = 1) -> str:
    return "" if value is None else f"{value:,.{digits}f}"


def headline(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(figure, value, target) rows shared by the CSV, the PDF and the e-mail; targets are
    floors, and 60% MFU is the best public figure, a reference rather than a target."""
    t = report["targets"]
    return [
        (
            _("Effective training rate"),
            _pct(report["effective_rate"]),
            target_text("effective_rate", t["effective_rate"]),
        ),
        (
            _("Time in the run not spent training (GPU-hours)"),
            _num(sum(report["phase_gpu_hours"].values())),
            "",
        ),
        (
            _("Cluster MTBF (hours)"),
            _num(report["mtbf_hours"]),
            _("cluster MTBF %(target)s") % {"target": target_text("mtbf_hours", t["mtbf_hours"])}
            + f" ({t['mtbf_hours']:g} h)",
        ),
        (
            _("GPU availability"),
            _pct(report["availability"]),
            target_text("availability", t["availability"]),
        ),
        (
            _("Mean MFU (GPU-weighted)"),
            _pct(report["mean_mfu"], 1),
            _("%(target)s (best public figure %(reference)s)")
            % {
                "target": target_text("mean_mfu", t["mean_mfu"]),
                "reference": _pct(report["mfu_reference"], 0),
            },
        ),
        (_("Unexpected interruptions"), str(report["interruptions"]), ""),
        (_("Planned interruptions"), str(report["planned_interruptions"]), ""),
        (_("MTTR (minutes)"), _num(report["mttr_minutes"]), ""),
        (_("Recovery, median (minutes)"), _num(report["recovery_minutes"]["p50"]), ""),
        (_("Recovery, 90th percentile (minutes)"), _num(report["recovery_minutes"]["p90"]), ""),
        (_("Recovery, longest (minutes)"), _num(report["recovery_minutes"]["max"]), ""),
        (_("Scheduled GPU-hours"), _num(report["scheduled_gpu_hours"]), ""),
        (_("Productive GPU-hours"), _num(report["productive_gpu_hours"]), ""),
        *(
            (
                _("Lost GPU-hours: %(cause)s") % {"cause": c.label},
                _num(report["lost_gpu_hours"][c]),
                "",
            )
            for c in LOSS_CAUSES
        ),
    ]


def week_title(report: dict[str, Any]) -> str:
    """`2026-W47`, or `2026-W48 (so far)` for a week still in progress."""
    return report["week"] + ("" if report["complete"] else _(" (so far)"))


def _job_row(j: dict[str, Any]) -> tuple[str, ...]:
    """A job's row of the PDF: ranked by lost GPU-hours, so that column comes first, then
    what it was scheduled (GPUs × hours) and how long it ran."""
    return (
        str(j["id"]),
        j["name"],
        str(j["gpu_count"]),
        _num(j["lost_gpu_hours_total"], 1),
        _num(j["scheduled_gpu_hours"], 0),
        _num(j["wall_hours"], 1),
        _pct(j["effective_rate"]),
        _pct(j["mean_mfu"], 1),
    )


def _table(
    pdf: FPDF,
    header: tuple[str, ...],
    rows: list[tuple[str, ...]],
    widths: tuple[int, ...],
    left: int = 1,
) -> None:
    """A table of text; its first `left` columns aligned left, figures right."""
    pdf.set_font(family(pdf), size=8)
    with pdf.table(
        col_widths=widths,
        headings_style=FontFace(emphasis="BOLD", fill_color=(238, 241, 244)),
        line_height=4.6,
        text_align=(*(["LEFT"] * left), *(["RIGHT"] * (len(header) - left))),
    ) as table:
        for values in [header, *rows]:
            row = table.row()
            for value in values:
                row.cell(fit(pdf, value))
    pdf.ln(4)


def _charts(pdf: FPDF, report: dict[str, Any], trends: dict[str, Any] | None) -> None:
    """The waterfall across the page, then the effective rate and the cluster MTBF of the
    past weeks side by side (on a new page when the rest of this one is too short)."""
    height = 66 + (62 if trends else 0)
    if pdf.get_y() + height > pdf.h - pdf.b_margin:
        pdf.add_page()
    top, left, width = pdf.get_y(), pdf.l_margin, pdf.epw
    targets = report["targets"]
    with pdf.local_context():  # colours, line widths and fonts go back as they were
        pdf_charts.waterfall(pdf, pdf_charts.Box(left, top, width, 62), report)
        if trends:
            half = (width - 8) / 2
            pdf_charts.effective_trend(
                pdf,
                pdf_charts.Box(left, top + 66, half, 58),
                trends["effective"],
                targets["effective_rate"],
            )
            pdf_charts.mtbf_trend(
                pdf,
                pdf_charts.Box(left + half + 8, top + 66, half, 58),
                trends["reliability"],
                targets["mtbf_hours"],
            )
    pdf.set_xy(left, top + height)


def _recovery(pdf: FPDF, report: dict[str, Any]) -> None:
    """Where the failure downtime went (one bar per part), then the time in the run not
    spent training, by phase (docs/formulas.md, Where the downtime went)."""
    if pdf.get_y() + 36 > pdf.h - pdf.b_margin:
        pdf.add_page()
    top = pdf.get_y()
    with pdf.local_context():
        pdf_charts.downtime_bars(
            pdf, pdf_charts.Box(pdf.l_margin, top, pdf.epw, 35), downtime_parts(report)
        )
    pdf.set_xy(pdf.l_margin, top + 37)
    pdf.set_font(family(pdf), "B", 11)
    pdf.cell(
        0,
        7,
        _("Time in the run not spent training (not part of the effective rate)"),
        new_x="LMARGIN",
        new_y="NEXT",
    )
    phases = report["phase_gpu_hours"]
    if not phases:
        pdf.set_font(family(pdf), size=8)
        pdf.cell(0, 5, _("No phases reported this week."), new_x="LMARGIN", new_y="NEXT")
        pdf.ln(3)
        return
    _table(pdf, (_("Phase"), _("GPU-hours")), [(k, _num(v)) for k, v in phases.items()], (100, 40))


def weekly_pdf(
    report: dict[str, Any],
    previous: dict[str, Any] | None = None,
    trends: dict[str, Any] | None = None,
) -> bytes:
    """A printable A4 report: headline figures against targets (and last week), where the
    GPU-hours went (a waterfall), the effective rate and cluster MTBF of the past weeks
    (`trends`, from `weekly.weekly_trends`), where the failure downtime went and the time in
    the run not spent training, costliest categories, jobs and incidents.

    In the active language: a Chinese report embeds a CJK font (`pdf_fonts`); with none on
    the server it is printed in English and its first page says why."""
    pdf = ReportPDF(format="A4")
    note = ""
    if (translation.get_language() or "").lower().startswith("zh"):
        path = cjk_font_path()
        if path:
            pdf.use_cjk(path)
        else:
            note = NO_CJK_FONT
    with translation.override(None if note else translation.get_language()):
        return _weekly_pdf(pdf, report, previous, trends, note)


def _weekly_pdf(
    pdf: FPDF,
    report: dict[str, Any],
    previous: dict[str, Any] | None,
    trends: dict[str, Any] | None,
    note: str,
) -> bytes:
    """The report's pages on `pdf` (see `weekly_pdf`)."""
    pdf.set_title(_("KUAE Ops weekly report %(week)s") % {"week": week_title(report)})
    pdf.set_author("KUAE Ops")
    pdf.set_auto_page_break(auto=True, margin=14)
    pdf.add_page()
    pdf.set_font(family(pdf), "B", 15)
    pdf.cell(
        0,
        9,
        fit(
            pdf,
            _("Weekly report - %(cluster)s - %(week)s")
            % {"cluster": report["cluster"], "week": week_title(report)},
        ),
        new_x="LMARGIN",
        new_y="NEXT",
    )
    pdf.set_font(family(pdf), size=9)
    pdf.cell(
        0,
        6,
        _("%(start)s to %(end)s UTC")
        % {"start": f"{report['start']:%Y-%m-%d %H:%M}", "end": f"{report['end']:%Y-%m-%d %H:%M}"},
        new_x="LMARGIN",
        new_y="NEXT",
    )
    if note:
        pdf.set_text_color(170, 30, 30)
        pdf.multi_cell(0, 5, fit(pdf, note), new_x="LMARGIN", new_y="NEXT")
        pdf.set_text_color(0, 0, 0)
    pdf.ln(2)
    last = dict((k, v) for k, v, _t in headline(previous)) if previous else {}
    _table(
        pdf,
        (
            _("Figure"),
            _("This week") if report["complete"] else _("This week so far"),
            _("Last week"),
            _("Target"),
        ),
        [(k, v, last.get(k, ""), t) for k, v, t in headline(report)],
        (84, 28, 28, 50),
    )
    _charts(pdf, report, trends)
    _recovery(pdf, report)
    if report["lost_by_category"]:
        pdf.set_font(family(pdf), "B", 11)
        pdf.cell(0, 7, _("Lost GPU-hours by incident category"), new_x="LMARGIN", new_y="NEXT")
        _table(
            pdf,
            (_("Category"), _("Incidents"), _("Lost GPU-hours")),
            [
                (r["label"], str(r["count"]), _num(r["lost_gpu_hours"]))
                for r in report["lost_by_category"]
            ],
            (100, 40, 50),
        )
    pdf.set_font(family(pdf), "B", 11)
    pdf.cell(0, 7, _("Jobs (costliest first: by lost GPU-hours)"), new_x="LMARGIN", new_y="NEXT")
    _table(
        pdf,
        (
            _("Job"),
            _("Name"),
            "GPUs",
            _("Lost GPU-h"),
            _("Scheduled GPU-h"),
            _("Wall-clock h"),
            _("Effective"),
            "MFU",
        ),
        [_job_row(j) for j in report["jobs"][:40]],
        (12, 52, 14, 22, 26, 23, 21, 20),
        left=2,
    )
    if report["incidents"]:
        pdf.set_font(family(pdf), "B", 11)
        pdf.cell(0, 7, _("Incidents behind the lost hours"), new_x="LMARGIN", new_y="NEXT")
        _table(
            pdf,
            ("#", _("Title"), _("Category"), _("This week GPU-h"), _("Cost GPU-h")),
            [
                (
                    str(i["id"]),
                    i["title"][:60],
                    i["category_label"],
                    _num(i["week_lost_gpu_hours"]),
                    _num(i["lost_gpu_hours"]) + ("" if i["recovered"] else _(" so far")),
                )
                for i in report["incidents"][:40]
            ],
            (14, 84, 38, 26, 28),
            left=3,
        )
    return bytes(pdf.output())
