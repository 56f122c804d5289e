"""`make load`: the production stack under load on this machine, from a second process.

gunicorn (2 workers × 4 threads), 2 Celery workers and beat on PostgreSQL and Redis, over a
simulated 10,240-GPU cluster. For LOAD_SECONDS (default 60) a load process posts telemetry
for every node every 15 s (12 metrics per GPU, the way per-node agents do, or batched by a
relay with --nodes-per-request) while 20 browsers poll the overview panel and the health
line every 20 s, as the page does. Prints sustained intake, whether each 15 s round finished
within its 15 s, overview latency percentiles, and errors. Asserts nothing.

`--stall-burst` instead hangs a 10,000-rank job (its ranks registered through the API) and
posts every rank's stall report as its own request, as the ranks' watchdogs do within a
minute, from 32 connections at once; it prints how long the server took to accept them all,
the errors, and how many ranks the database then holds a report of.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
DB = "postgres://postgres@127.0.0.1:5432/kuae_load"
METRICS = {
    "gpu_util": 97.0,
    "mem_used_mib": 61000.0,
    "temp_c": 61.0,
    "mem_temp_c": 70.0,
    "power_w": 640.0,
    "sm_clock_mhz": 1980.0,
    "xid": 0.0,
    "ecc_sbe_total": 0.0,
    "ecc_dbe_total": 0.0,
    "tensor_active": 0.41,
    "nvlink_bw_total": 1.0e12,
    "gemm_tflops": 700.0,
}


def _env(broker: str) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": DB,
        "CELERY_BROKER_URL": broker,
        "DJANGO_SETTINGS_MODULE": "kuaeweb.settings",
        "KUAE_TESTING": "1",
        "DJANGO_HTTPS": "0",
        "KUAE_SCRAPE_INTERVAL": "0",
        "KUAE_QUEUE": "load",
        "PYTHONUNBUFFERED": "1",
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }


def _prepare(env: dict[str, str], gpus: int) -> tuple[str, str, list[str]]:
    """Fresh database, a simulated day, an agent token and a manager's session cookie."""
    import psycopg

    with psycopg.connect("postgres://postgres@127.0.0.1:5432/postgres", autocommit=True) as c:
        c.execute('DROP DATABASE IF EXISTS "kuae_load" WITH (FORCE)')
        c.execute('CREATE DATABASE "kuae_load"')
    py = [sys.executable, "manage.py"]
    subprocess.run([*py, "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    subprocess.run(
        [*py, "simulate", "--gpus", str(gpus), "--days", "2", "--seed", "1"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    script = (
        "from apps.accounts.services import token_issue, user_create_or_update\n"
        "from apps.fleet.models import Node\n"
        "from django.contrib.auth import get_user_model\n"
        "from importlib import import_module\n"
        "from django.conf import settings\n"
        "agent = user_create_or_update(username='load-agent', role='agent')\n"
        "mia = user_create_or_update(username='load-mia', role='manager')\n"
        "store = import_module(settings.SESSION_ENGINE).SessionStore()\n"
        "store['_auth_user_id'] = str(mia.pk)\n"
        "store['_auth_user_backend'] = 'django.contrib.auth.backends.ModelBackend'\n"
        "store['_auth_user_hash'] = mia.get_session_auth_hash()\n"
        "store.save()\n"
        "print(token_issue(user=agent))\n"
        "print(store.session_key)\n"
        "print(','.join(Node.objects.order_by('hostname').values_list('hostname', flat=True)))\n"
    )
    out = (
        subprocess.run(
            [*py, "shell", "-c", script],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        .stdout.strip()
        .splitlines()
    )
    return out[-3], out[-2], out[-1].split(",")


def _start(
    env: dict[str, str], port: int, logdir: Path, workers: int, threads: int
) -> list[subprocess.Popen]:
    cmds = [
        [
            "gunicorn",
            "kuaeweb.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--threads",
            str(threads),
        ],
        [
            "celery",
            "-A",
            "kuaeweb",
            "worker",
            "-Q",
            "load",
            "--concurrency=1",
            "-n",
            "w1@%h",
            "--without-gossip",
            "--without-mingle",
        ],
        [
            "celery",
            "-A",
            "kuaeweb",
            "worker",
            "-Q",
            "load",
            "--concurrency=1",
            "-n",
            "w2@%h",
            "--without-gossip",
            "--without-mingle",
        ],
        ["celery", "-A", "kuaeweb", "beat", "-s", str(logdir / "beat")],
    ]
    procs = []
    for i, cmd in enumerate(cmds):
        log = open(logdir / f"p{i}.log", "wb")  # noqa: SIM115 - as long as the process
        procs.append(
            subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=log, start_new_session=True)
        )
    return procs


async def _agents(
    url: str, token: str, hosts: list[str], per_request: int, seconds: float, stats: dict
) -> None:
    headers = {"Authorization": f"Token {token}"}
    limits = httpx.Limits(max_connections=16)
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30, limits=limits) as c:
        sem = asyncio.Semaphore(16)

        async def post(batch: list[str], ts: str) -> None:
            body = {
                "samples": [
                    {"node": h, "gpu": g, "ts": ts, "metrics": METRICS}
                    for h in batch
                    for g in range(8)
                ]
            }
            async with sem:
                try:
                    r = await c.post("/api/v1/ingest/telemetry/", json=body)
                    ok = r.status_code == 202
                    if not ok:
                        stats["error_kinds"].append(f"{r.status_code} {r.text[:80]}")
                except httpx.HTTPError as exc:
                    ok = False
                    stats["error_kinds"].append(type(exc).__name__)
            stats["requests"] += 1
            stats["values" if ok else "errors"] += len(batch) * 8 * len(METRICS) if ok else 1

        end = time.monotonic() + seconds
        while time.monotonic() < end:
            start = time.monotonic()
            ts = dt.datetime.now(dt.UTC).isoformat()
            batches = [hosts[i : i + per_request] for i in range(0, len(hosts), per_request)]
            # spread a round's requests over the interval, as independent agents do
            tasks = []
            for k, batch in enumerate(batches):
                delay = start + 14.0 * k / len(batches) - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                tasks.append(asyncio.create_task(post(batch, ts)))
            await asyncio.gather(*tasks)
            took = time.monotonic() - start
            stats["rounds"].append(took)
            await asyncio.sleep(max(0.0, 15.0 - took))


async def _browsers(url: str, session: str, seconds: float, stats: dict) -> None:
    async def one(k: int) -> None:
        cookies = {"sessionid": session}
        async with httpx.AsyncClient(base_url=url, cookies=cookies, timeout=30) as c:
            await asyncio.sleep(k)  # browsers opened at different moments
            end = time.monotonic() + seconds - k
            while time.monotonic() < end:
                for path in ("/?panel=1", "/health/summary/"):
                    t = time.monotonic()
                    try:
                        r = await c.get(path)
                        ok = r.status_code == 200
                    except httpx.HTTPError:
                        ok = False
                    stats["pages" if path.startswith("/?") else "health"].append(
                        time.monotonic() - t
                    )
                    if not ok:
                        stats["page_errors"] += 1
                await asyncio.sleep(20)

    await asyncio.gather(*(one(k) for k in range(20)))


BURST_RANKS = 10_000
WAIT_STACK = [  # innermost last, as the Reporter's watchdog sends it
    {"file": "/work/train.py", "function": "train_step", "line": 88},
    {
        "file": "/opt/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py",
        "function": "all_reduce",
        "line": 2501,
    },
]


def _burst_job(env: dict[str, str], hosts: list[str]) -> int:
    """A running job on `hosts` whose progress stopped 70 s ago; its id."""
    script = (
        "import datetime as dt\n"
        "from django.utils import timezone\n"
        "from apps.fleet.models import Node\n"
        "from apps.jobs.choices import JobStatus\n"
        "from apps.jobs.models import Job\n"
        f"hosts = {hosts!r}\n"
        "nodes = Node.objects.filter(hostname__in=hosts)\n"
        "now = timezone.now()\n"
        f"job = Job.objects.create(cluster=nodes[0].cluster, name='stall-burst',"
        f" gpu_count={BURST_RANKS}, status=JobStatus.RUNNING,"
        " started_at=now - dt.timedelta(hours=1), progress_at=now - dt.timedelta(seconds=70),"
        " progress_step=41_217, last_step_time_s=1.0)\n"
        "job.nodes.set(nodes)\n"
        "print(job.pk)\n"
    )
    return _shell_number(env, script)


def _reported(env: dict[str, str], job: int) -> int:
    """How many of the job's ranks hold a stall report."""
    script = (
        "from apps.jobs.models import Rank\n"
        f"print(Rank.objects.filter(job_id={job}, report_at__isnull=False).count())\n"
    )
    return _shell_number(env, script)


def _shell_number(env: dict[str, str], script: str) -> int:
    """The number `script` prints last, run by `manage.py shell` on the load's database."""
    out = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", script],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return int(out.stdout.strip().splitlines()[-1])


async def _stall_burst(url: str, token: str, job: int, hosts: list[str]) -> dict:
    """Register the job's ranks (10 requests of 1,000), then post every rank's stall report
    as its own request from 32 connections; the burst's figures."""
    per_node = -(-BURST_RANKS // len(hosts))
    where = [hosts[r // per_node] for r in range(BURST_RANKS)]
    headers = {"Authorization": f"Token {token}"}
    limits = httpx.Limits(max_connections=32)
    now = dt.datetime.now(dt.UTC)
    started = (now - dt.timedelta(hours=1)).isoformat()
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60, limits=limits) as c:
        for i in range(0, BURST_RANKS, 1000):
            ranks = [
                {
                    "rank": r,
                    "world_size": BURST_RANKS,
                    "node": where[r],
                    "local_rank": r % 8,
                    "started_at": started,
                }
                for r in range(i, min(BURST_RANKS, i + 1000))
            ]
            r = await c.post(f"/api/v1/jobs/{job}/ranks/", json={"ranks": ranks})
            r.raise_for_status()
        ts = dt.datetime.now(dt.UTC).isoformat()
        errors: list[str] = []
        retried: list[str] = []
        took: list[float] = []
        sem = asyncio.Semaphore(32)

        async def report(rank: int) -> None:
            body = {
                "job": job,
                "node": where[rank],
                "ts": ts,
                "rank": rank,
                "last_step": 41_216,
                "stalled_s": 60.0,
                "stack": WAIT_STACK,
                "in_collective": True,
            }
            async with sem:
                t = time.monotonic()
                for attempt in range(2):
                    try:
                        r = await c.post("/api/v1/ingest/stalls/", json=body)
                        if r.status_code != 202:
                            errors.append(f"{r.status_code} {r.text[:80]}")
                        break
                    except httpx.TransportError as exc:
                        # a kept-alive connection gunicorn closed as it was reused: sent again,
                        # as the Reporter does (a report sent twice is stored once)
                        if attempt:
                            errors.append(type(exc).__name__)
                        else:
                            retried.append(type(exc).__name__)
                took.append(time.monotonic() - t)

        t0 = time.monotonic()
        await asyncio.gather(*(report(r) for r in range(BURST_RANKS)))
        wall = time.monotonic() - t0
    return {"wall": wall, "errors": errors, "retried": retried, "took": took}


def _pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[q - 1] * 1000 if len(values) > 1 else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gpus", type=int, default=10240)
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("LOAD_SECONDS", 60)))
    parser.add_argument("--nodes-per-request", type=int, default=1)
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/14")
    parser.add_argument("--web-workers", type=int, default=2, help="gunicorn processes")
    parser.add_argument("--web-threads", type=int, default=4, help="threads per process")
    parser.add_argument(
        "--stall-burst", action="store_true", help="a 10,000-rank job's stall reports instead"
    )
    args = parser.parse_args()
    env = _env(args.broker)
    logdir = Path("/tmp/kuae-load")
    logdir.mkdir(exist_ok=True)
    print(f"preparing: {args.gpus:,} GPUs simulated over 2 days …", flush=True)
    token, session, hosts = _prepare(env, args.gpus)
    port = 8765
    procs = _start(env, port, logdir, args.web_workers, args.web_threads)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        if args.stall_burst:
            _burst_main(env, url, token, hosts, args)
            return
        stats: dict = {
            "requests": 0,
            "values": 0,
            "errors": 0,
            "error_kinds": [],
            "rounds": [],
            "pages": [],
            "health": [],
            "page_errors": 0,
        }
        started = time.monotonic()

        async def both() -> None:
            await asyncio.gather(
                _agents(url, token, hosts, args.nodes_per_request, args.seconds, stats),
                _browsers(url, session, args.seconds, stats),
            )

        asyncio.run(both())
        wall = time.monotonic() - started
    finally:
        for p in procs:
            os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            p.wait(30)
    rounds = stats["rounds"]
    print(
        f"\nLoad: {len(hosts):,} nodes × 8 GPUs × {len(METRICS)} metrics every 15 s, "
        f"{args.nodes_per_request} node(s) per request, for {wall:.0f} s; 20 browsers polling; "
        f"gunicorn {args.web_workers} × {args.web_threads} threads\n"
        f"  intake: {stats['values']:,} values in {stats['requests']:,} requests = "
        f"{stats['values'] / (15 * len(rounds)):,.0f} values/s over the rounds (needed: "
        f"{len(hosts) * 8 * len(METRICS) / 15:,.0f}/s); errors {stats['errors']} "
        f"{sorted(set(stats['error_kinds']))[:3]}\n"
        f"  rounds: {len(rounds)}, each finished in {', '.join(f'{r:.1f}' for r in rounds)} s "
        f"(keeps up when ≤ 15 s)\n"
        f"  overview panel: {len(stats['pages'])} loads, p50 {_pct(stats['pages'], 50):.0f} ms, "
        f"p95 {_pct(stats['pages'], 95):.0f} ms, max {max(stats['pages'], default=0) * 1000:.0f} ms"
        f"  (goal p95 ≤ 300 ms)\n"
        f"  health line: p95 {_pct(stats['health'], 95):.0f} ms; page errors {stats['page_errors']}"
    )


def _burst_main(
    env: dict[str, str], url: str, token: str, hosts: list[str], args: argparse.Namespace
) -> None:
    """Run and print the stall burst (the server already up)."""
    job = _burst_job(env, hosts)
    burst = asyncio.run(_stall_burst(url, token, job, hosts))
    stored = _reported(env, job)
    took = burst["took"]
    print(
        f"\nStall burst: {BURST_RANKS:,} single stall reports from 32 connections at once, "
        f"gunicorn {args.web_workers} × {args.web_threads} threads, Celery workers and beat "
        f"running, on {os.cpu_count()} cores (the load generator included)\n"
        f"  all accepted in {burst['wall']:.1f} s ({BURST_RANKS / burst['wall']:,.0f} a second)"
        f"   goal: within 60 s\n"
        f"  per request: p50 {_pct(took, 50):.0f} ms, p95 {_pct(took, 95):.0f} ms; errors "
        f"{len(burst['errors'])} {sorted(set(burst['errors']))[:3]}; sent again after a "
        f"closed connection {len(burst['retried'])}\n"
        f"  ranks holding a report in the database afterwards: {stored:,} of {BURST_RANKS:,}"
    )


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
