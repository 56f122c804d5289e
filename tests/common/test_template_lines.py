"""Templates stay readable: no line of a template is longer than 400 characters
(docs/pages.md, Templates). A long line is broken where the page renders the same — between
attributes, at a space in the text, next to a block element such as `<div>` or `<td>`, or
inside a `{% blocktranslate trimmed %}` (which joins its lines with one space, so the
message is unchanged); a `{% %}` tag itself cannot span lines."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LONGEST = 400


def long_lines(roots: list[Path], longest: int = LONGEST) -> list[str]:
    """`path:line (length)` for each line of an .html file under `roots` over `longest`."""
    found: list[str] = []
    for root in roots:
        for path in sorted(root.rglob("*.html")):
            lines = path.read_text(encoding="utf-8").splitlines()
            found += [
                f"{path.relative_to(root.parent)}:{n} ({len(line)})"
                for n, line in enumerate(lines, 1)
                if len(line) > longest
            ]
    return found


def test_no_template_line_is_over_400_characters() -> None:
    roots = [ROOT / "templates", ROOT / "apps"]
    assert sum(1 for root in roots for _ in root.rglob("*.html")) > 50  # the templates were read
    assert long_lines(roots) == []


def test_the_check_finds_a_long_line(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "a.html").write_text("<p>short</p>\n<p>" + "x" * 400 + "</p>\n")
    assert long_lines([tmp_path / "t"]) == ["t/a.html:2 (407)"]
