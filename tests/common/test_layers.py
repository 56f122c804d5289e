"""Dependencies point one way (docs/architecture.md, The apps and which way they depend). Each
domain app imports only the apps below it (accounts and common, cross-cutting, are below every one);
an app above lends a reader downwards at start-up instead (`fleet/readers.py`,
`jobs/readers.py`)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

APPS = Path(__file__).resolve().parents[2] / "apps"
BASE = {"common", "accounts"}
ALLOWED = {
    "fleet": BASE,
    "jobs": BASE | {"fleet"},
    "incidents": BASE | {"jobs", "fleet"},
    "maintenance": BASE | {"incidents", "jobs", "fleet"},
    "health": BASE | {"maintenance", "incidents", "jobs", "fleet"},
    "scheduler": BASE | {"incidents", "jobs", "fleet"},
    "reports": BASE | {"scheduler", "health", "incidents", "jobs", "fleet"},
    "metrics": BASE | {"health", "incidents", "jobs", "fleet"},
    "search": BASE | {"incidents", "jobs", "fleet"},  # the header's search box: reads only
    "repairs": BASE | {"health", "maintenance", "incidents", "jobs", "fleet"},
}


def imported_apps(app: str) -> dict[str, set[str]]:
    """file → the other apps it imports (at module level or inside functions)."""
    found: dict[str, set[str]] = {}
    for path in (APPS / app).rglob("*.py"):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
                names.update(f"{node.module}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
        others = {n.split(".")[1] for n in names if n.startswith("apps.") and n.count(".") >= 1}
        if others - {app}:
            found[str(path.relative_to(APPS))] = others - {app}
    return found


@pytest.mark.parametrize("app", sorted(ALLOWED))
def test_an_app_imports_only_the_apps_below_it(app: str) -> None:
    wrong = {f: a - ALLOWED[app] for f, a in imported_apps(app).items() if a - ALLOWED[app]}
    assert not wrong, wrong
