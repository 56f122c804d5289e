"""The bench at fleet scale: a telemetry sweep, every scheduled check and the pages at
10,240 and 102,400 GPUs (8 per node), and how each grows from the smaller to the larger.

`python -m tests.bench.scale [--gpus 10240,102400]` (or `make bench-scale`) runs this part
alone; `make bench` runs it last. Each size is built and measured in a fresh bench database
(BENCH_DATABASE_URL, dropped and recreated) by a process of its own, which hands its figures
back as JSON; this one prints a table per part — the figure at each size, the growth
(largest ÷ smallest) and the SQL statements at each size. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from tests.bench.run import DEFAULT_URL, django_ready

Part = dict[str, dict[str, float | None]]  # label → {"value": …, "queries": …}


def _child(args: argparse.Namespace) -> None:
    """Build and measure one size in a fresh database; write the figures to `args.out`."""
    django_ready(args.url)
    from tests.bench.scale_size import measure_size

    figures = measure_size(
        args.one, days=args.days, failure_rate=args.failure_rate, repeat=args.repeat
    )
    Path(args.out).write_text(json.dumps(asdict(figures)))


def _measure(url: str, gpus: int, args: argparse.Namespace) -> dict:
    """One size's figures, from a process of its own (its output shown as it goes)."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "figures.json"
        command = [sys.executable, "-m", "tests.bench.scale", "--one", str(gpus)]
        command += ["--out", str(out), "--url", url, "--days", str(args.days)]
        command += ["--failure-rate", str(args.failure_rate), "--repeat", str(args.repeat)]
        subprocess.run(command, check=True)
        return json.loads(out.read_text())


def _number(value: float | None) -> str:
    """A figure as printed: counts whole, others to three significant places or so."""
    if value is None:
        return "—"
    if isinstance(value, int) or abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"


def table(title: str, sizes: list[dict], part: str) -> None:
    """Print one part: each label's figure per size, growth (last ÷ first), queries per size."""
    parts: list[Part] = [size[part] for size in sizes]
    labels = list(dict.fromkeys(label for p in parts for label in p))
    width = max(len(label) for label in labels) + 2
    heads = [f"{s['gpus']:,} GPUs" for s in sizes]
    print(f"\n{title}")
    print(
        f"{'':<{width}}"
        + "".join(f"{h:>14}" for h in heads)
        + f"{'growth':>9}"
        + "".join(f"{'queries ' + h.split()[0]:>16}" for h in heads)
    )
    for label in labels:
        row = [p.get(label) or {"value": None, "queries": None} for p in parts]
        first, last = row[0]["value"], row[-1]["value"]
        growth = f"{last / first:.1f}×" if first and last is not None else "—"
        print(
            f"{label:<{width}}"
            + "".join(f"{_number(r['value']):>14}" for r in row)
            + f"{growth:>9}"
            + "".join(f"{_number(r['queries']):>16}" for r in row)
        )


def report(sizes: list[dict], seconds: float) -> None:
    """The tables, the findings per check and the run's length."""
    fleets = [f"{size['gpus']:,} GPUs ({size['nodes']:,} nodes)" for size in sizes]
    print(f"\nScale: {', '.join(fleets)}")
    for size in sizes:
        size["fleet"] = {label: {"value": v, "queries": None} for label, v in size["build"].items()}
    table("Fleet built and parts measured", sizes, "fleet")
    table("Telemetry sweep, 128 nodes per request (HTTP API)", sizes, "sweep")
    table("Checks, each kind's first run after the fleet appears (ms)", sizes, "first")
    table("Checks, one run of each kind (ms), steady state", sizes, "checks")
    for size in sizes:
        found = "; ".join(
            f"{kind} {', '.join(f'{k} {v:,}' for k, v in counts.items() if v) or '—'}"
            for kind, counts in size["findings"].items()
        )
        print(f"  results at {size['gpus']:,} GPUs: {found}")
    table("Checks, detection alone (ms): loading what each reads and judging", sizes, "detect")
    table("Pages, server time (median ms)", sizes, "pages")
    if any(size["prometheus"] for size in sizes):
        table("Prometheus as the source: a pull, and each check reading it", sizes, "prometheus")
    print(f"\nScale part: {seconds / 60:.1f} min")


def bench_scale(url: str, gpus: list[int], args: argparse.Namespace) -> None:
    """Measure each fleet size in turn and print the tables."""
    start = time.perf_counter()
    sizes = [_measure(url, n, args) for n in gpus]
    report(sizes, time.perf_counter() - start)


def parser() -> argparse.ArgumentParser:
    """The command line, also used by `tests.bench.run` for its scale options."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--gpus", default="10240,102400", help="fleet sizes, comma-separated")
    p.add_argument("--days", type=float, default=2, help="history the plan covers")
    p.add_argument("--failure-rate", type=float, default=0.01, help="per node-day")
    p.add_argument("--repeat", type=int, default=7, help="page requests per median")
    p.add_argument("--url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL))
    p.add_argument("--one", type=int, help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    return p


def main() -> None:
    args = parser().parse_args()
    if args.one:
        _child(args)
        return
    bench_scale(args.url, [int(n) for n in args.gpus.split(",") if n.strip()], args)


if __name__ == "__main__":
    sys.path.insert(0, os.getcwd())
    main()
