"""docs/api.md is what `manage.py api_docs` writes from the app's own OpenAPI document."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from apps.common.apidocs import DOC_PATH, REGENERATE, api_markdown, prose, render


def _first_differences(expected: str, actual: str, lines: int = 30) -> str:
    diff = difflib.unified_diff(
        expected.splitlines(), actual.splitlines(), "docs/api.md", "regenerated", lineterm=""
    )
    return "\n".join(list(diff)[:lines])


def test_docs_api_md_is_what_the_command_writes() -> None:
    current = DOC_PATH.read_text(encoding="utf-8")
    fresh = api_markdown()
    assert current == fresh, (
        f"docs/api.md is out of date: run `{REGENERATE}`\n" + _first_differences(current, fresh)
    )


def test_regenerating_twice_gives_the_same_text() -> None:
    assert api_markdown() == api_markdown()


def test_check_fails_on_a_stale_file_and_passes_on_a_fresh_one(tmp_path: Path) -> None:
    target = tmp_path / "api.md"
    target.write_text("stale\n")
    with pytest.raises(CommandError, match="out of date"):
        call_command("api_docs", "--output", str(target), "--check")
    call_command("api_docs", "--output", str(target))
    call_command("api_docs", "--output", str(target), "--check")


DOCUMENT = {
    "paths": {
        "/api/v1/things/{id}/": {
            "patch": {
                "description": "One thing (docs/formulas.md, What an incident cost).",
                "parameters": [{"in": "path", "name": "id", "schema": {"type": "integer"}}],
                "requestBody": {
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/W"}}}
                },
                "responses": {"200": {"content": {}, "description": ""}},
            },
            "get": {
                "description": "One thing (docs/formulas.md, What an incident cost).",
                "responses": {
                    "200": {
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/T"}}
                        },
                        "description": "",
                    }
                },
            },
        },
        "/api/v1/alpha/": {
            "get": {
                "description": "A list (see docs/formulas.md).",
                "parameters": [
                    {
                        "in": "query",
                        "name": "state",
                        "schema": {"type": "array", "items": {"enum": ["b", "a"]}},
                        "description": "* `b` - B\n* `a` - A",
                    }
                ],
                "responses": {
                    "200": {
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/PT"}}
                        },
                        "description": "",
                    }
                },
            }
        },
    },
    "components": {
        "schemas": {
            "T": {
                "type": "object",
                "description": "A thing (documentation only; at most 5 parts).",
                "properties": {"name": {"type": "string"}},
            },
            "PT": {
                "type": "object",
                "properties": {
                    "count": {"type": "integer"},
                    "next": {"type": "string"},
                    "previous": {"type": "string"},
                    "results": {"type": "array", "items": {"$ref": "#/components/schemas/T"}},
                },
            },
            "W": {
                "type": "object",
                "required": ["parts"],
                "properties": {
                    "parts": {
                        "type": "array",
                        "maxItems": 5,
                        "items": {
                            "type": "object",
                            "required": ["at"],
                            "properties": {
                                "at": {"type": "string", "format": "date-time"},
                                "size": {"type": "integer", "minimum": 0, "maximum": 10000},
                            },
                        },
                    }
                },
            },
        }
    },
}


def test_render_orders_describes_and_lists_roles() -> None:
    text = render(
        DOCUMENT,
        {
            ("/api/v1/things/{pk}/", "get"): ["manager", "admin"],
            ("/api/v1/things/{pk}/", "patch"): ["admin"],
        },
    )
    assert text.index("## Alpha") < text.index("## Things")
    assert text.index("`GET /api/v1/things/{id}/`") < text.index("`PATCH /api/v1/things/{id}/`")
    assert "**Who may call it:** `manager`, `admin`" in text
    assert "**Who may call it:** not declared" in text  # alpha: no roles known
    assert "| `parts[].at` | string (date-time) | yes |" in text
    assert "| `parts[].size` | integer | no | 0–10,000 |" in text
    assert "array, each one of `b`, `a`" in text
    assert "page of object [`T`](#object-t)" in text
    assert "### Object `T`" in text
    assert "A thing (at most 5 parts)." in text
    assert "docs/" not in text.split("## Endpoints", 1)[1]
    assert text.count("One thing.") == 1  # a view's docstring is said once per path


def test_prose_drops_design_references_and_author_notes() -> None:
    assert prose("Costs at one instant (docs/incidents.md).") == "Costs at one instant."
    assert prose("Cost (docs/formulas.md, What an incident cost).") == "Cost."
    assert prose("GPUs (by state — docs/formulas.md, GPUs now).") == "GPUs (by state)."
    kept = "Alerts (`alerts/`;\n docs/alertmanager.md, Unrouted alerts)."
    assert prose(kept) == "Alerts (`alerts/`)."
    assert prose("Body (documented for the schema; parsed by jobs.intake).") == "Body."
    assert prose("Line one\ncontinues.\n\nSecond.") == "Line one continues.\n\nSecond."
