"""The repository cites only what a reader of it has: its own `docs/` (docs/architecture.md,
Citing the documentation).

Every text file git tracks (or would track: new files not ignored) is read. None may name a
document that lives outside the repository — the product's old spec files or their
section signs, a sibling checkout's `shared/` folder. Every `docs/PAGE` cited must exist;
a heading cited after it (`docs/checks.md, Storms`, or an anchor `docs/checks.md#storms`)
must be one of that page's headings; every relative link of a markdown file must reach a
file, and its anchor a heading of that file.

This module is the one place that spells the refused names, so it is the one file the
scan skips; `tests/reports/test_plain_words.py` reuses FOREIGN_DOCUMENTS for what pages
show.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().relative_to(ROOT).as_posix()
# Third-party files kept as they were published: not ours to word.
SKIPPED = ("static/vendor/",)

# Documents outside the repository: the spec files, a section sign that numbers their
# sections, and the shared folder beside the checkout. `design` as a word is fine; the
# file's name in capitals is not.
FOREIGN_DOCUMENTS = re.compile(
    r"(?i:\bcontracts?\b)|§|\bUI\.md\b|\bDESIGN\b|\bSTYLE\.md\b|\.\./shared\b|/work/shared\b"
)

# `docs/PAGE`, not preceded by a path (`site/docs/x.md`), with an optional anchor and what
# follows on the line.
CITATION = re.compile(
    r"(?<![\w./-])docs/(?P<page>(?:[\w-]+/)*[\w.-]+\.(?:md|csv|png))"
    r"(?:#(?P<anchor>[\w-]+))?(?=(?P<rest>.*))"
)
# A heading cited after the page: ", Heading" starting with a capital, a digit or a backtick.
HEADING_CITED = re.compile(r"^, *(?=[A-Z0-9`])(?P<heading>.*)$")
# Where a cited heading's words end on the line.
HEADING_END = re.compile(r"[).;,:\"]| [—–] ")
MARKDOWN_LINK = re.compile(r"!?\[[^\]]*\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING_LINE = re.compile(r"^(#{1,6})\s+(?P<text>.+?)\s*#*\s*$")


def tracked_files() -> list[Path]:
    """Files of the checkout git tracks or would track (not ignored), that exist."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the tracked files are unknown")
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    names = sorted({n for n in out.split("\0") if n})
    return [ROOT / n for n in names if not n.startswith(SKIPPED) and (ROOT / n).is_file()]


def text_of(path: Path) -> str | None:
    """A file's text, or None for a binary file (a NUL byte, or not UTF-8)."""
    data = path.read_bytes()
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def outside_fences(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of a markdown text, skipping fenced code blocks."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def headings(markdown: str) -> list[str]:
    """A markdown page's headings, as written (code blocks' `#` comments are not headings)."""
    found = []
    for _, line in outside_fences(markdown):
        match = HEADING_LINE.match(line)
        if match:
            found.append(match["text"])
    return found


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as `-`."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """Every anchor of a page; a repeated heading's anchor gets `-1`, `-2`, … as on GitHub."""
    seen: dict[str, int] = {}
    out = set()
    for heading in headings(markdown):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def _words(text: str) -> str:
    """A heading or a citation of one, compared without case, backticks or extra spaces."""
    return " ".join(text.replace("`", "").lower().split())


def _starts(longer: str, shorter: str) -> bool:
    """`longer` begins with `shorter`, ending at a word's end."""
    return longer.startswith(shorter) and (
        len(longer) == len(shorter) or not longer[len(shorter)].isalnum()
    )


def names_heading(cited: str, page_headings: list[str]) -> bool:
    """The words cited after a page name one of its headings: the heading in full (maybe
    followed by more prose), or its first words ("Heartbeat" for "`heartbeat` — a node …")."""
    words = _words(HEADING_END.split(cited, maxsplit=1)[0])
    if not words:
        return False
    for heading in map(_words, page_headings):
        if _starts(words, heading) or _starts(heading, words):
            return True
    return False


def foreign_references(text: str) -> list[tuple[int, str]]:
    """(line number, the words) of every reference to a document outside the repository."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        words = [m.group(0) for m in FOREIGN_DOCUMENTS.finditer(line)]
        if words:
            found.append((number, " ".join(dict.fromkeys(words))))
    return found


def citation_problems(text: str, root: Path = ROOT) -> list[tuple[int, str]]:
    """(line number, what is wrong) for every `docs/…` citation that does not resolve."""
    problems = []
    cache: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        for match in CITATION.finditer(line):
            page, anchor, rest = match["page"], match["anchor"], match["rest"]
            target = root / "docs" / page
            if not target.is_file():
                problems.append((number, f"docs/{page} does not exist"))
                continue
            if not page.endswith(".md"):
                continue
            markdown = cache.setdefault(page, target.read_text(encoding="utf-8"))
            if anchor is not None and anchor not in anchors(markdown):
                problems.append((number, f"docs/{page} has no heading with anchor #{anchor}"))
            if rest.rstrip() == ",":
                problems.append((number, f"docs/{page}, …: keep a cited heading on its line"))
            cited = HEADING_CITED.match(rest)
            if cited and not names_heading(cited["heading"], headings(markdown)):
                words = HEADING_END.split(cited["heading"], maxsplit=1)[0].strip()
                problems.append((number, f"docs/{page} has no heading {words!r}"))
    return problems


def link_problems(path: Path, text: str, root: Path = ROOT) -> list[tuple[int, str]]:
    """(line number, what is wrong) for every relative link of a markdown file that does not
    reach a file, or whose anchor is not a heading of it."""
    problems = []
    for number, line in outside_fences(text):
        for match in MARKDOWN_LINK.finditer(line):
            target = match["target"]
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith(("/", "<")):
                continue  # a URL, or a path on the running site
            name, _, anchor = target.partition("#")
            linked = (path.parent / name).resolve()
            if name and (not linked.exists() or root.resolve() not in linked.parents):
                problems.append((number, f"{target}: no such file in the repository"))
                continue
            if anchor and (not name or linked.suffix == ".md"):
                page = linked.read_text(encoding="utf-8") if name else text
                if anchor not in anchors(page):
                    problems.append((number, f"{target}: no heading with that anchor"))
    return problems


def _report(problems: list[str], advice: str) -> str:
    shown = "\n".join(problems[:60])
    more = f"\n… and {len(problems) - 60} more" if len(problems) > 60 else ""
    return f"{advice}\n{shown}{more}"


def _texts() -> Iterator[tuple[str, Path, str]]:
    for path in tracked_files():
        name = path.relative_to(ROOT).as_posix()
        if name == HERE:
            continue
        text = text_of(path)
        if text is not None:
            yield name, path, text


def test_nothing_cites_a_document_outside_the_repository() -> None:
    problems = [
        f"{name}:{number}: {words}"
        for name, _, text in _texts()
        for number, words in foreign_references(text)
    ]
    assert not problems, _report(
        problems,
        "Cite the page of docs/ that holds the rule (docs/checks.md, Storms), writing the "
        "missing part of docs/ first if there is none:",
    )


def test_every_cited_docs_page_and_heading_exists() -> None:
    problems = [
        f"{name}:{number}: {what}"
        for name, _, text in _texts()
        for number, what in citation_problems(text)
    ]
    assert not problems, _report(problems, "A citation of docs/ that does not resolve:")


def test_every_relative_markdown_link_resolves() -> None:
    problems = [
        f"{name}:{number}: {what}"
        for name, path, text in _texts()
        if name.endswith(".md")
        for number, what in link_problems(path, text)
    ]
    assert not problems, _report(problems, "A markdown link that leads nowhere:")


def test_the_scan_reads_the_code_the_docs_and_the_templates() -> None:
    names = {name for name, _, _ in _texts()}
    assert {"apps/reports/effective.py", "docs/formulas.md", "templates/base.html"} <= names
    assert "static/css/app.css" in names and "agent/kuae_agent/report.py" in names
    assert not any(n.startswith(SKIPPED) for n in names) and HERE not in names
    assert "docs/overview.png" not in names  # binary: not text


@pytest.mark.parametrize(
    "line",
    [
        "# see CONTRACT §5",
        "(§4.2)",
        '"""The rule (contract section 6)."""',
        "DESIGN: dependencies point one way",
        "as UI.md asks",
        "STYLE.md says",
        "copies of ../shared/data",
    ],
)
def test_a_reference_to_an_outside_document_is_found(line: str) -> None:
    assert foreign_references(line)


@pytest.mark.parametrize(
    "line", ["# the design of the API", "docs/checks.md, Storms", "Designated nodes", "shared"]
)
def test_ordinary_words_are_not_references(line: str) -> None:
    assert not foreign_references(line)


@pytest.mark.parametrize(
    "line",
    [
        "# docs/checks.md",
        "# docs/checks.md, Storms",
        '"""(docs/checks.md, Heartbeat)."""',  # the first words of "`heartbeat` — a node …"
        "(docs/formulas.md, GPUs now)",
        "docs/formulas.md, Targets says the floors",  # the heading, then prose
        "docs/integrations.md, 2d. Prometheus as the telemetry source",
        "[x](docs/operations.md#limits), docs/dcgm-counters.csv",
        "see docs/api.md, and docs/xid.md",  # not a heading: lower case after the comma
        "apps/x/docs/nothing.md",  # another folder's docs/
    ],
)
def test_a_citation_that_resolves_passes(line: str) -> None:
    assert citation_problems(line) == []


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("# docs/nothing.md", "docs/nothing.md does not exist"),
        ("# docs/checks.md, Thunderstorms", "no heading 'Thunderstorms'"),
        ("(docs/checks.md, Storm)", "no heading 'Storm'"),  # a heading's whole words
        ("docs/operations.md#limitless", "no heading with anchor #limitless"),
        ("# (docs/checks.md,", "keep a cited heading on its line"),
    ],
)
def test_a_citation_that_does_not_resolve_is_named(line: str, problem: str) -> None:
    [(number, what)] = citation_problems(line)
    assert number == 1 and problem in what


def test_anchors_are_githubs() -> None:
    page = "# T\n## From 10,000 to 100,000 GPUs\n## `heartbeat` — a node\n```\n# not one\n```\n"
    assert anchors(page + "## T\n") == {
        "t",
        "from-10000-to-100000-gpus",
        "heartbeat--a-node",
        "t-1",
    }
    assert headings(page) == ["T", "From 10,000 to 100,000 GPUs", "`heartbeat` — a node"]


def test_a_broken_markdown_link_is_named(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n## Part one\n")
    page = tmp_path / "b.md"
    text = "[ok](a.md#part-one) [ok](#b) [web](https://x.example) [site](/api/docs/)\n# B\n"
    assert link_problems(page, text, root=tmp_path) == []
    bad = "[gone](c.md) [anchor](a.md#part-two)\n```\n[in code](nowhere.md)\n```\n"
    assert [what for _, what in link_problems(page, bad, root=tmp_path)] == [
        "c.md: no such file in the repository",
        "a.md#part-two: no heading with that anchor",
    ]
