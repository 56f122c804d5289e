"""The weekly PDF's charts, drawn by fpdf2 itself as vector shapes and text (no browser, no
image): where the week's GPU-hours went (a waterfall), and the effective rate and the
cluster MTBF over the past weeks, each against its target.

Colours come from the palettes the pages use (`GpuHours`, `Series`, `Tone`); a week with no
data or no failure is written as such, never drawn as 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _
from fpdf import FPDF

from apps.common.charts import SERIES
from apps.common.choices import INK, Tone
from apps.reports.choices import LOSS_CAUSES, DowntimePart, GpuHours
from apps.reports.pdf_fonts import family, fit
from apps.reports.pdf_fonts import latin as latin  # the Latin-1 fallback, kept here for callers
from apps.reports.targets import target_text

RGB = tuple[int, int, int]
GRID: RGB = (222, 226, 231)
MUTED: RGB = (96, 104, 114)


def rgb(colour: str) -> RGB:
    """A palette colour (a `Hue`, written `#rrggbb`) as the (red, green, blue) fpdf2 takes."""
    red, green, blue = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return red, green, blue


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values (1, 2, 2.5 or 5 × 10ⁿ apart) covering [lo, hi], about `count`."""
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / max(count - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.floor(lo / step + 1e-9) * step
    count = math.ceil((hi - first) / step - 1e-9)  # 0.04 / 0.01 is 4.000000000000001
    return [round(first + k * step, 12) for k in range(count + 1)]


@dataclass(frozen=True)
class Box:
    """A rectangle on the page, in millimetres from the top left."""

    x: float
    y: float
    w: float
    h: float

    @property
    def bottom(self) -> float:
        """The y of its lower edge."""
        return self.y + self.h

    @property
    def right(self) -> float:
        """The x of its right edge."""
        return self.x + self.w


def _text(pdf: FPDF, x: float, y: float, text: str, size: float, align: str = "L") -> None:
    """`text` with its baseline at y, its left (L), centre (C) or right (R) end at x."""
    pdf.set_font(family(pdf), size=size)
    text = fit(pdf, text)
    width = pdf.get_string_width(text)
    pdf.text(x - {"L": 0, "C": width / 2, "R": width}[align], y, text)


def _frame(pdf: FPDF, box: Box, title: str, note: str = "") -> Box:
    """The chart's title (and a note under it) at the top of `box`; returns the plot area
    left once the axis labels have room."""
    pdf.set_text_color(*rgb(INK))
    pdf.set_font(family(pdf), "B", 9)
    pdf.text(box.x, box.y + 3.5, fit(pdf, title))
    top = box.y + 6
    if note:
        pdf.set_text_color(*MUTED)
        _text(pdf, box.x, box.y + 7, note, 6.5)
        top += 3
    return Box(box.x + 15, top + 2, box.w - 17, box.bottom - top - 11)


def _y_axis(
    pdf: FPDF, plot: Box, ticks: Sequence[float], label: Callable[[float], str]
) -> Callable[[float], float]:
    """Gridlines and labels at `ticks` (the first and last are the axis' ends); returns
    value → y on the page."""
    lo, hi = ticks[0], ticks[-1]

    def y(value: float) -> float:
        return plot.bottom - (value - lo) / (hi - lo) * plot.h

    pdf.set_line_width(0.15)
    pdf.set_draw_color(*GRID)
    pdf.set_text_color(*MUTED)
    for tick in ticks:
        pdf.line(plot.x, y(tick), plot.right, y(tick))
        _text(pdf, plot.x - 1.2, y(tick) + 1, label(tick), 6.5, "R")
    return y


def _target(pdf: FPDF, plot: Box, y: float) -> None:
    """A dashed grey line across the plot at a target (said in the chart's note, where no
    bar or label can cover it)."""
    with pdf.local_context():
        pdf.set_draw_color(*rgb(SERIES["target"]))
        pdf.set_line_width(0.3)
        pdf.set_dash_pattern(dash=1.2, gap=0.8)
        pdf.line(plot.x, y, plot.right, y)


def _x_labels(
    pdf: FPDF,
    plot: Box,
    centres: Sequence[float],
    labels: Sequence[str],
    values: Sequence[tuple[str, RGB]] = (),
) -> None:
    """Category labels under the plot, centred, one or two lines (split at a newline), and
    under each a value in its colour when `values` are given (a newline splits it too): a
    row of figures that no bar or line can run into."""
    for k, (x, label) in enumerate(zip(centres, labels, strict=True)):
        lines = label.split("\n")
        pdf.set_text_color(*rgb(INK))
        for row, line in enumerate(lines):
            _text(pdf, x, plot.bottom + 3.6 + 2.8 * row, line, 6.5, "C")
        if values:
            text, colour = values[k]
            pdf.set_text_color(*colour)
            for row, line in enumerate(text.split("\n"), start=len(lines)):
                _text(pdf, x, plot.bottom + 3.8 + 2.8 * row, line, 6.5, "C")


def _wrap(label: str) -> str:
    """A label of several words on two lines, broken at the space nearest its middle."""
    if " " not in label:
        return label
    cut = min((i for i, c in enumerate(label) if c == " "), key=lambda i: abs(i - len(label) / 2))
    return f"{label[:cut]}\n{label[cut + 1 :]}"


def _week_label(week: dict[str, Any], first: bool) -> str:
    head, _dash, number = week["week"].partition("-")
    text = number if not first else f"{number} {head}"
    return text if week.get("complete", True) else f"{text}\n{_('so far')}"


def _slots(plot: Box, n: int) -> tuple[list[float], float]:
    """Centres of `n` equal category slots across the plot, and a bar width in each."""
    slot = plot.w / max(n, 1)
    return [plot.x + slot * (k + 0.5) for k in range(n)], slot * 0.62


def waterfall(pdf: FPDF, box: Box, report: dict[str, Any]) -> None:
    """Scheduled GPU-hours, minus each cause of loss, down to the productive ones, with the
    productive GPU-hours the effective-rate target asks for as a dashed line."""
    scheduled, productive = report["scheduled_gpu_hours"], report["productive_gpu_hours"]
    lost = report["lost_gpu_hours"]
    target = report["targets"]["effective_rate"]
    floor_ = min(productive, target * scheduled) - max(sum(lost.values()), scheduled * 0.002, 1)
    floor_ = max(0.0, floor_)
    ticks = nice_ticks(floor_, scheduled + (scheduled - floor_) * 0.08 + 1)
    start = (
        _("; the axis starts at %(start)s") % {"start": f"{ticks[0]:,.0f}"} if ticks[0] > 0 else ""
    )
    note = _(
        "GPU-hours%(start)s. Dashed: the target, effective rate %(target)s, "
        "= %(productive)s productive GPU-hours"
    ) % {
        "start": start,
        "target": target_text("effective_rate", target),
        "productive": f"{target * scheduled:,.0f}",
    }
    if not scheduled:
        plot = _frame(pdf, box, _("Where the GPU-hours went"), _("No job ran in this week."))
        return
    plot = _frame(pdf, box, _("Where the GPU-hours went"), note)
    y = _y_axis(pdf, plot, ticks, lambda v: f"{v:,.0f}")
    names = [
        _("Scheduled"),
        *(str(c.label).capitalize() for c in LOSS_CAUSES),
        str(GpuHours.PRODUCTIVE.label).capitalize(),
    ]
    centres, width = _slots(plot, len(names))
    # (bottom, top, colour) of each bar: the two totals stand on the axis, each cause hangs
    # from the level the one before it left.
    bars = [(ticks[0], scheduled, GpuHours.PRODUCTIVE.colour)]
    level = scheduled
    for cause in LOSS_CAUSES:
        bars.append((level - lost[cause], level, cause.colour))
        level -= lost[cause]
    bars.append((ticks[0], productive, GpuHours.PRODUCTIVE.colour))
    _target(pdf, plot, y(target * scheduled))
    for k, ((low, high, colour), x) in enumerate(zip(bars, centres, strict=True)):
        pdf.set_fill_color(*rgb(colour))
        pdf.rect(x - width / 2, y(high), width, max(y(low) - y(high), 0.3), style="F")
        if k + 1 < len(bars):  # a connector to the next bar at the level reached
            reached = y(low if k > 0 else high)
            pdf.set_draw_color(*rgb(SERIES["target"]))
            pdf.set_line_width(0.15)
            pdf.line(x + width / 2, reached, centres[k + 1] - width / 2, reached)
    figures = [
        f"{scheduled:,.0f}",
        *(f"-{lost[c]:,.1f}" if lost[c] >= 0.05 else "0" for c in LOSS_CAUSES),
        f"{productive:,.0f}",
    ]
    _x_labels(
        pdf,
        plot,
        centres,
        [_wrap(n) for n in names],
        [(f, rgb(INK)) for f in figures],
    )


def effective_trend(pdf: FPDF, box: Box, weeks: list[dict[str, Any]], target: float) -> None:
    """The effective rate week by week (a line, each week's value under its label) against
    its target; a week in which no job ran is a gap that says "no data"."""
    note = _("Dashed: the target, %(target)s") % {"target": target_text("effective_rate", target)}
    plot = _frame(pdf, box, _("Effective training rate by week"), note)
    rates = [w["effective_rate"] if w["scheduled_gpu_hours"] else None for w in weeks]
    known = [r for r in rates if r is not None]
    lo, hi = min([*known, target]), max([*known, target])
    pad = max((hi - lo) * 0.2, 0.002)
    ticks = nice_ticks(lo - pad, min(hi + pad, 1.0), 5)
    y = _y_axis(pdf, plot, ticks, lambda v: f"{100 * v:.1f}%")
    _target(pdf, plot, y(target))
    centres, _width = _slots(plot, len(weeks))
    colour = rgb(SERIES["mfu"])
    pdf.set_draw_color(*colour)
    pdf.set_fill_color(*colour)
    pdf.set_line_width(0.5)
    run: list[tuple[float, float]] = []
    for rate, x in zip([*rates, None], [*centres, 0.0], strict=True):
        if rate is None:  # a gap, or the end: draw the run so far
            if len(run) > 1:
                pdf.polyline(run, style="D")
            run = []
            continue
        run.append((x, y(rate)))
        pdf.circle(x, y(rate), 0.8, style="F")
    values = [
        (f"{100 * r:.2f}%", rgb(INK)) if r is not None else (_("no\ndata"), MUTED) for r in rates
    ]
    _x_labels(pdf, plot, centres, [_week_label(w, k == 0) for k, w in enumerate(weeks)], values)


def mtbf_trend(pdf: FPDF, box: Box, weeks: list[dict[str, Any]], target: float) -> None:
    """Cluster MTBF week by week (bars, hours; each week's value under its label) against
    its target. A week without a failure has no MTBF: a mark at the top and "no failure";
    a week in which no node was in service says "no data"."""
    note = _("Dashed: the target, %(target)s") % {
        "target": f"{target_text('mtbf_hours', target)} ({target:g} h)"
    }
    plot = _frame(pdf, box, _("Cluster MTBF by week (hours)"), note)
    values = [w["mtbf_hours"] for w in weeks if w["mtbf_hours"]]
    ticks = nice_ticks(0.0, max([*values, target]) * 1.2, 5)
    y = _y_axis(pdf, plot, ticks, lambda v: f"{v:,.0f}")
    centres, width = _slots(plot, len(weeks))
    figures: list[tuple[str, RGB]] = []
    for week, x in zip(weeks, centres, strict=True):
        mtbf = week["mtbf_hours"]
        if mtbf:
            pdf.set_fill_color(*rgb(SERIES["mfu"]))
            pdf.rect(x - width / 2, y(mtbf), width, plot.bottom - y(mtbf), style="F")
            figures.append((f"{mtbf:,.0f} h", rgb(INK)))
        elif not week.get("node_days", 1):
            figures.append((_("no\ndata"), MUTED))
        else:  # in service, no unexpected interruption: the MTBF is longer than the week
            good = rgb(Tone.GOOD.colour)
            pdf.set_fill_color(*good)
            top = plot.y + 0.8
            pdf.polygon([(x - 1.4, top + 2.4), (x + 1.4, top + 2.4), (x, top)], style="F")
            figures.append((_("no\nfailure"), good))
    _target(pdf, plot, y(target))
    _x_labels(pdf, plot, centres, [_week_label(w, k == 0) for k, w in enumerate(weeks)], figures)


def downtime_bars(pdf: FPDF, box: Box, parts: list[dict[str, Any]]) -> None:
    """The failures' downtime by part (`weekly.downtime_parts`): one horizontal bar per part
    in its colour, as long as its share of the downtime, its GPU-hours and share beside it."""
    total = sum(p["gpu_hours"] for p in parts)
    note = _("Each failure's downtime cut where it was detected, localised and mitigated.")
    plot = _frame(pdf, box, _("Where the failure downtime went"), note)
    if total <= 0:
        pdf.set_text_color(*MUTED)
        _text(pdf, box.x, plot.y + 3, _("No failure downtime in this week."), 8)
        return
    label_w, figure_w = 62.0, 52.0
    bar_x, bar_w = box.x + label_w, box.w - label_w - figure_w
    row_h = 6.0  # the box is 11 mm of title and note, then the rows
    for k, part in enumerate(parts):
        top = plot.y + k * row_h
        pdf.set_text_color(*rgb(INK))
        _text(pdf, box.x, top + row_h * 0.65, f"{part['label'].capitalize()}", 8)
        pdf.set_text_color(*MUTED)
        _text(pdf, box.x + 19, top + row_h * 0.65, f"({part['span']})", 6.5)
        pdf.set_fill_color(*GRID)
        pdf.rect(bar_x, top + row_h * 0.2, bar_w, row_h * 0.6, style="F")
        share = part["share"] or 0.0
        if share > 0:
            pdf.set_fill_color(*rgb(DowntimePart(part["part"]).colour))
            pdf.rect(bar_x, top + row_h * 0.2, max(bar_w * share, 0.3), row_h * 0.6, style="F")
        pdf.set_text_color(*rgb(INK))
        _text(
            pdf,
            box.right,
            top + row_h * 0.65,
            _("%(hours)s GPU-h  %(share)s of downtime")
            % {"hours": f"{part['gpu_hours']:,.1f}", "share": f"{100 * share:.1f}%"},
            8,
            "R",
        )
