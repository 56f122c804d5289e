"""Dependencies point one way: every app under apps/ imports only the apps below it.

The order, bottom first: `common` imports no app; `accounts` only common; `fleet` accounts
(and common); `telemetry` the fleet; `jobs` the fleet and telemetry; then incidents,
maintenance, health, scheduler and the apps above them, each importing downwards only;
`simulator` at the top, imported by none. An app below that needs something from one above
is lent it at start-up instead, from the upper app's `AppConfig.ready()` (`fleet/readers.py`,
`telemetry/monitored.py`, `jobs/readers.py`, `accounts/scoping.py`, `common/panels.py`).

The checker reads each module's syntax tree, so what it flags is what Python would import:
module-level imports (those under `if TYPE_CHECKING:` too), imports inside functions — any
import of another app inside a function is flagged, since that is how a cycle hides, except
in an `AppConfig.ready()`, where lending happens — `importlib.import_module("apps.…")`,
`apps.get_model("label", …)` and a model relation named by string (`ForeignKey("fleet.Cluster")`)
outside migrations (which are history: they name the models of their day).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

APPS = Path(__file__).resolve().parents[2] / "apps"
# Django's own apps, which sit below every app of the project (any may name their models).
DJANGO_APPS = frozenset({"admin", "auth", "contenttypes", "sessions", "messages"})

# Bottom first; each app may import the apps listed with it, all of them earlier in the list.
_BASE = {"common", "accounts"}
_FLEET = {"fleet", "telemetry"}  # the inventory, and everything measured on it
ORDER: list[tuple[str, set[str]]] = [
    ("common", set()),
    ("accounts", {"common"}),
    ("fleet", _BASE),
    ("telemetry", _BASE | {"fleet"}),
    ("jobs", _BASE | _FLEET),
    ("incidents", _BASE | {"jobs"} | _FLEET),
    ("maintenance", _BASE | {"incidents", "jobs"} | _FLEET),
    ("health", _BASE | {"maintenance", "incidents", "jobs"} | _FLEET),
    ("scheduler", _BASE | {"incidents", "jobs"} | _FLEET),
    ("reports", _BASE | {"scheduler", "health", "incidents", "jobs"} | _FLEET),
    ("metrics", _BASE | {"health", "incidents", "jobs"} | _FLEET),
    ("search", _BASE | {"incidents", "jobs"} | _FLEET),  # the header's search box: reads only
    ("repairs", _BASE | {"health", "maintenance", "incidents", "jobs"} | _FLEET),
]
ORDER.append(("simulator", {app for app, _ in ORDER}))  # the top: it drives every app
ALLOWED: dict[str, set[str]] = dict(ORDER)
RELATIONS = {"ForeignKey", "OneToOneField", "ManyToManyField"}


def _package_of(path: Path, root: Path) -> list[str]:
    """`fleet/services/nodes.py` → `[apps, fleet, services]`: the package a relative import
    starts from."""
    return ["apps", *path.relative_to(root).parent.parts]


def _app_of(module: str) -> str | None:
    """`apps.fleet.models` → `fleet`; None for a module outside apps/."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "apps" else None


def _is_ready(func: ast.AST, parent: ast.AST | None) -> bool:
    """Whether `func` is the `ready()` method of an AppConfig subclass."""
    return (
        isinstance(func, ast.FunctionDef)
        and func.name == "ready"
        and isinstance(parent, ast.ClassDef)
        and any(
            (isinstance(b, ast.Name) and b.id == "AppConfig")
            or (isinstance(b, ast.Attribute) and b.attr == "AppConfig")
            for b in parent.bases
        )
    )


def _string(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _references(
    tree: ast.Module, path: Path, root: Path, *, migration: bool
) -> Iterator[tuple[int, str, str]]:
    """(line, app named, how) for every reference to an app in a module's tree; `how` is
    `import`, `import inside a function`, `import inside ready()` or `model by name`."""

    def walk(node: ast.AST, func: ast.AST | None, ready: bool) -> Iterator[tuple[int, str, str]]:
        for child in ast.iter_child_nodes(node):
            inner, in_ready = func, ready
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                inner, in_ready = child, _is_ready(child, node)
            how = "import"
            if inner is not None:
                how = "import inside ready()" if in_ready else "import inside a function"
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield child.lineno, alias.name, how
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:  # relative: from the module's package, then up
                    package = _package_of(path, root)
                    package = package[: len(package) + 1 - child.level]
                    base = ".".join([*package, *([base] if base else [])])
                yield child.lineno, base, how
                if base == "apps":  # `from apps import fleet`
                    for alias in child.names:
                        yield child.lineno, f"apps.{alias.name}", how
            elif isinstance(child, ast.Call):
                name = getattr(child.func, "attr", None) or getattr(child.func, "id", None)
                first = _string(child.args[0]) if child.args else None
                if name == "import_module" and first:
                    yield child.lineno, first, how
                elif name == "get_model" and first and not migration:
                    if first.split(".")[0] not in DJANGO_APPS:
                        yield child.lineno, f"apps.{first.split('.')[0]}", "model by name"
                elif name in RELATIONS and not migration:
                    target = first or next(
                        (_string(k.value) for k in child.keywords if k.arg == "to"), None
                    )
                    if target and "." in target:
                        yield child.lineno, f"apps.{target.split('.')[0]}", "model by name"
            yield from walk(child, inner, in_ready)

    yield from walk(tree, None, False)


def unplaced_apps(root: Path, allowed: dict[str, set[str]]) -> list[str]:
    """The apps (packages) under `root` that the order `allowed` does not place."""
    return [
        f"{d.name}/: an app not placed in the order (add it to ORDER)"
        for d in sorted(root.iterdir())
        if d.is_dir() and (d / "__init__.py").exists() and d.name not in allowed
    ]


def app_violations(root: Path, app: str, allowed: dict[str, set[str]]) -> list[str]:
    """Every breach of the order `allowed` (app → the apps it may import) in `app` under
    `root`, one line each: a reference to an app not below it, or an import of another app
    inside a function other than an `AppConfig.ready()`."""
    found = []
    for path in sorted((root / app).rglob("*.py")):
        where = path.relative_to(root)
        tree = ast.parse(path.read_text(), filename=str(path))
        migration = "migrations" in where.parts
        for line, name, how in _references(tree, path, root, migration=migration):
            other = _app_of(name)
            if other is None or other == app:
                continue
            if other not in allowed[app]:
                found.append(f"{where}:{line}: {how} of {name}: {other} is not below {app}")
            elif how == "import inside a function":
                found.append(
                    f"{where}:{line}: {how} of {name}: import it at the top (a cycle?) "
                    "or lend it from an AppConfig.ready()"
                )
    return found


def layer_violations(root: Path, allowed: dict[str, set[str]]) -> list[str]:
    """Every breach of the order in the tree of apps under `root`."""
    found = unplaced_apps(root, allowed)
    for app in sorted(a for a in allowed if (root / a).is_dir()):
        found += app_violations(root, app, allowed)
    return found


# --- The tree as it is ----------------------------------------------------------------------


def test_the_order_has_no_cycle_every_app_imports_only_apps_earlier_in_it():
    seen: set[str] = set()
    for app, below in ORDER:
        assert below <= seen, f"{app} may import {below - seen}, not below it"
        seen.add(app)
    assert ALLOWED["common"] == set() and ALLOWED["accounts"] == {"common"}


def test_every_app_is_placed_in_the_order():
    apps = {d.name for d in APPS.iterdir() if d.is_dir() and (d / "__init__.py").exists()}
    assert {"common", "accounts", "fleet", "simulator"} <= apps
    assert apps == set(ALLOWED), unplaced_apps(APPS, ALLOWED)


@pytest.mark.parametrize("app", [app for app, _ in ORDER])
def test_an_app_imports_only_the_apps_below_it(app: str):
    wrong = app_violations(APPS, app, ALLOWED)
    assert wrong == [], "\n".join(wrong)


def test_no_app_imports_the_simulator():
    assert all("simulator" not in below for app, below in ORDER if app != "simulator")


# --- The checker fails on what it is there to catch -----------------------------------------


def _tree(root: Path, files: dict[str, str]) -> Path:
    """A tree of apps under `root/apps` holding `files` (path → source), with packages."""
    base = root / "apps"
    for app in ALLOWED:
        (base / app).mkdir(parents=True, exist_ok=True)
        (base / app / "__init__.py").touch()
    for name, text in files.items():
        path = base / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return base


def test_the_checker_passes_a_tree_that_keeps_the_order(tmp_path: Path):
    base = _tree(
        tmp_path,
        {
            "fleet/services.py": "from apps.accounts.models import User\n"
            "from apps.fleet.models import Node\n",
            "jobs/apps.py": "from django.apps import AppConfig\n\n"
            "class JobsConfig(AppConfig):\n"
            "    def ready(self):\n"
            "        from apps.fleet import readers\n",
            "jobs/models.py": 'x = models.ForeignKey("fleet.Cluster", on_delete=None)\n',
            "accounts/migrations/0003_old.py": 'f = models.ForeignKey(to="fleet.cluster")\n',
            "simulator/run.py": "from apps.reports import weekly\n",
        },
    )
    assert layer_violations(base, ALLOWED) == []


@pytest.mark.parametrize(
    ("name", "source", "expected"),
    [
        ("fleet/services.py", "from apps.reports import x\n", "fleet/services.py:1: import of"),
        ("fleet/api.py", "import apps.jobs.models\n", "apps.jobs.models: jobs is not below"),
        ("fleet/views.py", "from apps import health\n", "apps.health: health is not below"),
        (
            "fleet/models.py",
            "from apps.telemetry.names import ROLLUP_METRICS\n",
            "apps.telemetry.names: telemetry is not below fleet",
        ),
        ("fleet/services/a.py", "from ...jobs.models import Job\n", "jobs is not below"),
        ("common/fields.py", "def f():\n    from apps.fleet.models import C\n", "inside a"),
        ("accounts/scope.py", "def f():\n    from apps.fleet import m\n", "fleet is not below"),
        (
            "accounts/x.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from apps.jobs import m\n",
            "accounts/x.py:3: import of apps.jobs",
        ),
        (
            "fleet/services/nodes.py",
            "def f():\n    from apps.accounts.scope import require_nodes\n",
            "fleet/services/nodes.py:2: import inside a function of apps.accounts.scope",
        ),
        (
            "fleet/apps.py",
            "class FleetConfig(AppConfig):\n    def ready(self):\n        from apps.jobs import r",
            "import inside ready() of apps.jobs: jobs is not below fleet",
        ),
        (
            "fleet/apps.py",
            "class FleetConfig:\n    def ready(self):\n        from apps.accounts import s\n",
            "import inside a function of apps.accounts",  # not an AppConfig's ready()
        ),
        (
            "accounts/models.py",
            'scope = models.ForeignKey("fleet.Cluster", on_delete=models.PROTECT)\n',
            "model by name of apps.fleet: fleet is not below accounts",
        ),
        ("common/x.py", 'M = apps.get_model("fleet", "Node")\n', "model by name of apps.fleet"),
        ("common/y.py", 'import_module("apps.jobs.tasks")\n', "import of apps.jobs.tasks"),
        ("jobs/z.py", "from apps.simulator import s\n", "simulator is not below jobs"),
        (
            "jobs/w.py",
            "f = lambda: __import__('x')\ng = lambda: import_module('apps.fleet.m')\n",
            "w.py:2: import inside a function",
        ),
    ],
)
def test_the_checker_fails_on_a_planted_breach(
    tmp_path: Path, name: str, source: str, expected: str
):
    wrong = layer_violations(_tree(tmp_path, {name: source}), ALLOWED)
    assert len(wrong) == 1 and expected in wrong[0], wrong


def test_the_checker_fails_on_an_app_left_out_of_the_order(tmp_path: Path):
    base = _tree(tmp_path, {"billing/__init__.py": "", "billing/models.py": ""})
    assert layer_violations(base, ALLOWED) == [
        "billing/: an app not placed in the order (add it to ORDER)"
    ]
