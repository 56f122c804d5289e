"""No app writes hand-written SQL that names another app's table
(docs/architecture.md, Background work): SQL kept for speed takes the table and its columns
from the model (`apps.common.sql.ModelSql`), so a renamed table or column breaks it at once."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from django.apps import apps as django_apps
from django.core.exceptions import FieldDoesNotExist
from django.db import connection

from apps.common.sql import ModelSql
from apps.fleet.models import GPU

APPS = Path(__file__).resolve().parents[2] / "apps"
# A table named after a keyword that reads or writes it, quoted or not.
NAMED = re.compile(r'\b(?:FROM|UPDATE|INTO|JOIN|TABLE)\s+"?(\w+)"?', re.IGNORECASE)


def _owners() -> dict[str, str]:
    """table → the label of the project app whose model owns it."""
    return {
        model._meta.db_table: model._meta.app_label
        for model in django_apps.get_models(include_auto_created=True)
        if model.__module__.startswith("apps.")
    }


def _strings(path: Path) -> list[tuple[int, str]]:
    """Every string literal of a module (f-strings' literal parts too), with its line."""
    tree = ast.parse(path.read_text())
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def test_no_app_names_another_apps_table_in_sql() -> None:
    owners = _owners()
    found = []
    for path in sorted(APPS.rglob("*.py")):
        app = path.relative_to(APPS).parts[0]
        if "migrations" in path.parts:
            continue  # history: a migration names the tables of its day
        for line, text in _strings(path):
            for table in NAMED.findall(text):
                owner = owners.get(table)
                if owner is not None and owner != app:
                    found.append(f"{path.relative_to(APPS)}:{line} names {table} ({owner})")
    assert found == []


def test_the_checker_sees_a_table_named_in_an_update(tmp_path: Path) -> None:
    """The scan above would catch the SQL it replaced."""
    module = tmp_path / "m.py"
    module.write_text('SQL = f"UPDATE fleet_gpu AS t SET x = 1 WHERE {1}"\n')
    (text,) = [t for _, t in _strings(module) if "UPDATE" in t]
    assert NAMED.findall(text) == ["fleet_gpu"] and _owners()["fleet_gpu"] == "fleet"


def test_model_sql_quotes_the_models_own_names() -> None:
    names = ModelSql(GPU)
    quote = connection.ops.quote_name
    assert names["table"] == quote(GPU._meta.db_table)
    assert names["node_id"] == names["node"] == quote("node_id")
    assert "UPDATE {table} SET {prev_at} = 1".format_map(names) == (
        f"UPDATE {quote('fleet_gpu')} SET {quote('prev_at')} = 1"
    )
    assert set(names) >= {"table", "metrics", "updated_at"}
    with pytest.raises(FieldDoesNotExist):
        "UPDATE {table} SET {metric} = 1".format_map(names)
