"""A page's cards keep the layers (docs/architecture.md, Readers lent downwards): a template
of an app polls (`data-refresh`) or charts (`data-figure`) only URLs served by its own app or
the apps below it. A card whose contents an app above knows — the job page's effective rate,
incidents and suspects — is lent through `apps/common/panels.py` by that app, with its own
template, instead of being named by the page."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from django.urls import URLPattern, URLResolver, get_resolver

from tests.common.test_layers import ALLOWED

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
# `data-refresh="{% url 'name' …` or `data-figure="{% url 'name' …`
POLLED = re.compile(r"""data-(?:refresh|figure)="\{% url ['"]([\w-]+)['"]""")


def _patterns(resolver: URLResolver) -> Iterator[URLPattern]:
    for p in resolver.url_patterns:
        if isinstance(p, URLResolver):
            yield from _patterns(p)
        else:
            yield p


def _app_of_url() -> dict[str, str]:
    """URL name → the app whose view serves it (`apps.jobs.views` → `jobs`)."""
    out: dict[str, str] = {}
    for pattern in _patterns(get_resolver()):
        parts = getattr(pattern.callback, "__module__", "").split(".")
        if pattern.name and len(parts) > 1 and parts[0] == "apps":
            out[pattern.name] = parts[1]
    return out


def polled_above(templates: Path, app_of_url: dict[str, str]) -> list[str]:
    """`template: url-name (app)` for each URL a template polls that an app above the
    template's own serves."""
    found: list[str] = []
    for path in sorted(templates.rglob("*.html")):
        app = path.relative_to(templates).parts[0]
        if app not in ALLOWED:
            continue  # base.html, includes/, admin/: no app's page
        for name in POLLED.findall(path.read_text(encoding="utf-8")):
            served = app_of_url.get(name)
            if served is not None and served != app and served not in ALLOWED[app]:
                found.append(f"{path.relative_to(templates)}: {name} ({served})")
    return found


def test_no_page_polls_an_app_above_its_own():
    app_of_url = _app_of_url()
    assert app_of_url["job-ranks"] == "jobs" and app_of_url["health-job-suspects"] == "health"
    assert polled_above(TEMPLATES, app_of_url) == []


def test_the_check_finds_a_card_named_across_the_layers(tmp_path: Path):
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "page.html").write_text(
        "<div data-refresh=\"{% url 'job-ranks' job.pk %}\"></div>\n"
        "<div data-refresh=\"{% url 'health-job-suspects' job.pk %}\"></div>\n"
    )
    found = polled_above(tmp_path, _app_of_url())
    assert found == ["jobs/page.html: health-job-suspects (health)"]
