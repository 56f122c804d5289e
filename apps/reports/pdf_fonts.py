"""The weekly PDF's fonts (docs/operations.md, Languages): Helvetica for English, and for
Chinese a font with CJK glyphs, embedded, so no character prints as a box.

The CJK font is found at run time: `KUAE_PDF_CJK_FONT` (a path) when set, else the system's
fontconfig (`fc-match` for Simplified Chinese), else the paths Debian's `fonts-wqy-microhei`,
`fonts-wqy-zenhei` and `fonts-noto-cjk` install. A candidate counts only if it has the glyphs
of a Chinese sample; with none, the report says so and is printed in English.
"""

from __future__ import annotations

import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

from django.conf import settings
from fontTools.ttLib import TTFont
from fpdf import FPDF

CJK_FAMILY = "KuaeCJK"
LATIN_FAMILY = "Helvetica"
# Where Debian's CJK font packages put their fonts (a TrueType collection is read at index 0).
KNOWN_PATHS = (
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/truetype/arphic/uming.ttc",
)
# Characters the report prints in every Chinese PDF: a font without them is no use.
SAMPLE = "周报集群故障节点有效训练率"
# What the English fallback says on its first page.
NO_CJK_FONT = (
    "No font with Chinese glyphs was found on this server, so this report is in English. "
    "Install one (Debian: fonts-wqy-microhei) or set KUAE_PDF_CJK_FONT to its path."
)


def latin(text: str) -> str:
    """The core fonts are Latin-1: '≥', '−' and '→' are spelt out, anything else becomes '?'."""
    text = text.replace("≥", ">=").replace("−", "-").replace("–", "-").replace("→", "->")
    return text.encode("latin-1", "replace").decode("latin-1")


def has_glyphs(path: str | Path, text: str = SAMPLE) -> bool:
    """Whether the font at `path` (its first face, for a collection) maps every character of
    `text`; False for a file that is missing or no font."""
    try:
        font = TTFont(str(path), fontNumber=0, lazy=True)
        cmap = font.getBestCmap() or {}
    except Exception:  # noqa: BLE001 - any unreadable file is simply not a usable font
        return False
    return all(ord(ch) in cmap for ch in text)


def _fontconfig() -> str | None:
    """The file fontconfig picks for Simplified Chinese, if fontconfig is installed."""
    binary = shutil.which("fc-match")
    if binary is None:
        return None
    try:
        out = subprocess.run(
            [binary, "-f", "%{file}", "sans-serif:lang=zh-cn"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


@lru_cache(maxsize=4)
def _find(override: str) -> str | None:
    if override:
        return override if has_glyphs(override) else None
    for candidate in (_fontconfig(), *KNOWN_PATHS):
        if candidate and has_glyphs(candidate):
            return candidate
    return None


def cjk_font_path() -> str | None:
    """The path of a font with CJK glyphs (see the module), or None when there is none; a
    `KUAE_PDF_CJK_FONT` that names no such font is None too (never a silent other font)."""
    return _find(getattr(settings, "KUAE_PDF_CJK_FONT", "") or "")


class ReportPDF(FPDF):
    """An A4 report whose text goes through `fit` and whose fonts are `family`: Helvetica
    (Latin-1), or an embedded CJK font once `use_cjk` is called."""

    family = LATIN_FAMILY
    unicode = False

    def use_cjk(self, path: str) -> None:
        """Embed the font at `path` (regular and bold from the same file) and write with it."""
        self.add_font(CJK_FAMILY, "", path)
        self.add_font(CJK_FAMILY, "B", path)
        self.family, self.unicode = CJK_FAMILY, True

    def fit(self, text: str) -> str:
        """`text` as the current font can print it."""
        return text if self.unicode else latin(text)


def family(pdf: FPDF) -> str:
    """The font family a report's text is set in."""
    return getattr(pdf, "family", LATIN_FAMILY)


def fit(pdf: FPDF, text: str) -> str:
    """`text` as `pdf`'s font can print it (Latin-1 for the core fonts)."""
    return pdf.fit(text) if isinstance(pdf, ReportPDF) else latin(text)
