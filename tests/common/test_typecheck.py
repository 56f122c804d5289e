"""The type-check ratchet: which modules are strict, and how mypy's output is counted."""

from __future__ import annotations

from tests.typecheck import errors_by_file, is_strict, strict_modules


def test_the_pure_modules_and_the_agent_are_strict():
    patterns = strict_modules()
    assert is_strict("apps/health/detectors/job_hang.py", patterns)
    assert is_strict("apps/health/detectors/__init__.py", patterns)
    assert is_strict("apps/reports/effective.py", patterns)
    assert is_strict("agent/kuae_agent/cli.py", patterns)
    assert is_strict("agent/kuae_agent/report.py", patterns)
    assert not is_strict("apps/health/views.py", patterns)
    assert not is_strict("apps/reports/effectiveness.py", patterns)


def test_errors_are_counted_per_file_and_notes_are_not():
    output = (
        "apps/a.py:3: error: Bad  [misc]\n"
        "apps/a.py:4:7: error: Worse  [misc]\n"
        "apps/a.py:4: note: See here\n"
        "apps/b/c.py:1: error: X  [misc]\n"
        "Found 3 errors in 2 files\n"
    )
    assert errors_by_file(output) == {"apps/a.py": 2, "apps/b/c.py": 1}
