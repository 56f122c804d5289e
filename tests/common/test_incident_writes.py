"""The incidents app owns its rows: every other app writes an incident, its nodes or its
timeline through `apps/incidents/services*.py` (docs/architecture.md, Inside an app), so the
timeline line, the impact, the notifications and the lock order go with every write.

The checker reads each module's syntax tree outside apps/incidents/ and flags a write
method called on a manager or queryset of a model imported from `apps.incidents.models`
(`Incident.objects.filter(pk=…).update(…)`), `save()`/`delete()` on an incident
(a name spelled `incident…`), and adding to or changing an incident's nodes
(`incident.nodes.add(…)`). The simulator's wipe of a whole simulated cluster is the one
exception: it deletes every app's rows of that cluster at once.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

APPS = Path(__file__).resolve().parents[2] / "apps"
OWNER = "incidents"
WRITES = frozenset(
    {
        "update",
        "create",
        "bulk_create",
        "bulk_update",
        "delete",
        "get_or_create",
        "update_or_create",
        "save",
    }
)
LINKS = frozenset({"add", "set", "remove", "clear"})
# (module under apps/, function): writes allowed there, with the reason in the docstring.
EXEMPT = frozenset({("simulator/writer.py", "cluster_wipe")})


def _root(node: ast.expr) -> tuple[str, list[str]]:
    """`Incident.objects.filter(x).update` → ("Incident", ["objects", "filter", "update"])."""
    attrs: list[str] = []
    while True:
        if isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            return (node.id if isinstance(node, ast.Name) else "", attrs[::-1])


def _models_imported(tree: ast.Module) -> set[str]:
    """The names a module binds to models of the incidents app."""
    return {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == f"apps.{OWNER}.models"
        for alias in node.names
    }


def writes_in(source: str) -> Iterator[tuple[int, str, str]]:
    """(line, enclosing function, what) for each write of the incidents app's rows in
    `source`, a module of another app."""
    tree = ast.parse(source)
    models = _models_imported(tree)

    def walk(node: ast.AST, func: str) -> Iterator[tuple[int, str, str]]:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, ast.FunctionDef) else func
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute):
                name, attrs = _root(child.func)
                method, before = attrs[-1], attrs[:-1]
                text = ast.unparse(child.func)
                if name in models and "objects" in before and method in WRITES:
                    yield child.lineno, inner, f"{text}(…) on {name}'s rows"
                elif "incident" in name.lower() and before == [] and method in WRITES:
                    yield child.lineno, inner, f"{text}() writes an incident"
                elif "incident" in name.lower() and before == ["nodes"] and method in LINKS:
                    yield child.lineno, inner, f"{text}(…) changes an incident's nodes"
            yield from walk(child, inner)

    yield from walk(tree, "")


def violations(root: Path) -> list[str]:
    """Every write of the incidents app's rows outside it under `root`, one line each."""
    found = []
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root)
        if where.parts[0] == OWNER or "migrations" in where.parts:
            continue
        for line, func, what in writes_in(path.read_text()):
            if (where.as_posix(), func) not in EXEMPT:
                found.append(f"{where}:{line} in {func or 'the module'}: {what}")
    return found


def test_no_app_but_incidents_writes_incident_rows():
    wrong = violations(APPS)
    assert wrong == [], "go through apps/incidents/services*.py:\n" + "\n".join(wrong)


@pytest.mark.parametrize(
    "source",
    [
        "Incident.objects.filter(pk=incident.pk).update(details=incident.details)",
        "Incident.objects.create(title='x')",
        "TimelineEntry.objects.create(incident=incident, text='x')",
        "Incident.objects.filter(cluster=c)[:5].delete()",
        "incident.save()",
        "incident.nodes.add(*[node_objs[h] for h in added])",
        "for incident in incidents:\n    incident.nodes.set([])",
    ],
)
def test_the_checker_flags_a_direct_write(source: str):
    module = "from apps.incidents.models import Incident, TimelineEntry\n" + source
    assert [what for _, _, what in writes_in(module)] != []


@pytest.mark.parametrize(
    "source",
    [
        "Incident.objects.filter(cluster=c).prefetch_related('nodes')",
        "incident_fold(incident=incident, nodes=nodes, details={'verdict': 'x'})",
        "incident.details.get('verdict')",
        "counts.update(seen)",
        "Job.objects.filter(pk=1).update(name='x')",  # another app's model
    ],
)
def test_the_checker_lets_reads_and_service_calls_pass(source: str):
    module = "from apps.incidents.models import Incident\n" + source
    assert list(writes_in(module)) == []


def test_the_exemption_is_still_needed():
    """An exemption that no longer matches a write is dropped, not left to hide one."""
    for module, func in EXEMPT:
        source = (APPS / module).read_text()
        assert any(f == func for _, f, _ in writes_in(source)), (module, func)
