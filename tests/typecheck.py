"""`make test`'s type check: mypy (Django and DRF plugins) with a ratchet.

The pure modules and the node agent are strict (pyproject's `[[tool.mypy.overrides]]`) and
must stay free of errors. Elsewhere each file may have at most the errors that
`tests/mypy-baseline.json` records for it: a new error fails, a fixed one lowers the
baseline (`python -m tests.typecheck --update` writes it; it never raises a count).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / "tests" / "mypy-baseline.json"
TARGETS = ("apps", "kuaeweb", "agent/kuae_agent")
# Folders that hold a distribution's packages (pyproject's mypy_path): agent/kuae_agent/x.py
# is the module kuae_agent.x.
SOURCE_ROOTS = ("agent/",)
ERROR = re.compile(r"^(?P<path>[^:\s]+\.py):\d+(?::\d+)?: error: ")


def strict_modules() -> list[str]:
    """The module patterns pyproject makes strict (those that disallow untyped defs)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    return [
        module
        for override in config.get("overrides", [])
        if override.get("disallow_untyped_defs")
        for module in override["module"]
    ]


def is_strict(path: str, patterns: list[str]) -> bool:
    """Whether the file `path` is one of the strict modules."""
    for root in SOURCE_ROOTS:
        path = path.removeprefix(root)
    module = path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    return any(fnmatch.fnmatchcase(module, p) or module == p.removesuffix(".*") for p in patterns)


def errors_by_file(output: str) -> Counter[str]:
    """How many errors mypy reported in each file."""
    return Counter(m["path"] for line in output.splitlines() if (m := ERROR.match(line)))


def main() -> int:
    """Run mypy and compare with the baseline; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--update", action="store_true", help="lower the baseline to today's")
    args = parser.parse_args()
    targets = [t for t in TARGETS if (ROOT / t).exists()]
    run = subprocess.run(
        [sys.executable, "-m", "mypy", *targets],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if run.returncode not in (0, 1):  # 2: mypy itself failed (a config or syntax error)
        print(run.stdout + run.stderr)
        return run.returncode
    found = errors_by_file(run.stdout)
    strict = strict_modules()
    allowed: dict[str, int] = json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
    allowed = {f: n for f, n in allowed.items() if not is_strict(f, strict)}
    if args.update:
        allowed = {
            f: min(n, allowed.get(f, n))
            for f, n in found.items()
            if n and not is_strict(f, strict) and (f in allowed or not BASELINE.exists())
        }
        BASELINE.write_text(json.dumps(dict(sorted(allowed.items())), indent=1) + "\n")
    worse = {f: n for f, n in found.items() if n > allowed.get(f, 0)}
    total, budget = sum(found.values()), sum(allowed.values())
    if worse:
        for line in run.stdout.splitlines():
            m = ERROR.match(line)
            if m and m["path"] in worse:
                print(line)
        print(f"\nmypy: more errors than the baseline allows in {len(worse)} file(s):")
        for f, n in sorted(worse.items()):
            print(f"  {f}: {n} (allowed {allowed.get(f, 0)})")
        return 1
    fixed = {f for f, n in allowed.items() if found.get(f, 0) < n}
    hint = (
        f"; fewer in {len(fixed)} file(s): run `python -m tests.typecheck --update`"
        if fixed
        else ""
    )
    print(f"mypy: {total} error(s), baseline {budget}{hint}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
