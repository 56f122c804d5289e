"""`kuae-agent`: collect on this node, spool to disk, deliver to KUAE Ops.

    kuae-agent run   --server URL --node HOST [--exporter URL | --nvidia-smi] [--interval 15]
    kuae-agent once  … (collect and deliver one round, for cron or a test)
    kuae-agent probe --server URL --node HOST [--gpus 0-7]
    kuae-agent flush --server URL (deliver what is spooled)

The token comes from --token-file, or the KUAE_TOKEN environment variable (kept out of `ps`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import signal
import sys
import time
from pathlib import Path
from urllib.parse import quote

import httpx

from kuae_agent.client import Client
from kuae_agent.probe import run_probe
from kuae_agent.sources import read_exporter, read_nvidia_smi
from kuae_agent.spool import Spool

log = logging.getLogger("kuae_agent")


def _iso(t: dt.datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def _gpus(spec: str) -> list[int]:
    out: list[int] = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def collect(args: argparse.Namespace, spool: Spool) -> bool:
    """Read the node's source once and spool what it said; False when it could not be read."""
    now = dt.datetime.now(dt.UTC)
    try:
        if args.nvidia_smi:
            samples = read_nvidia_smi(node=args.node, ts=now)
            spool.put(
                "/api/v1/ingest/telemetry/", json.dumps({"samples": samples}), "application/json"
            )
        else:
            text = read_exporter(args.exporter)
            path = f"/api/v1/ingest/prometheus/?node={quote(args.node)}&ts={quote(_iso(now))}"
            spool.put(path, text, "text/plain")
    except (httpx.HTTPError, OSError, ValueError) as exc:
        log.error("could not read the node's telemetry: %s", exc)
        return False
    return True


def probe(args: argparse.Namespace, spool: Spool) -> None:
    """Run the GEMM probe and spool its figures as telemetry."""
    results = run_probe(n=args.size)
    now = _iso(dt.datetime.now(dt.UTC))
    if results[0].device == "cpu":  # NumPy fallback: one figure, reported for each GPU named
        per_gpu = {gpu: results[0] for gpu in _gpus(args.gpus)}
    else:
        per_gpu = dict(enumerate(results))
    samples = [
        {
            "node": args.node,
            "gpu": gpu,
            "ts": now,
            "metrics": {"gemm_tflops": r.gemm_tflops, "gemm_checksum": r.gemm_checksum},
        }
        for gpu, r in per_gpu.items()
    ]
    spool.put("/api/v1/ingest/telemetry/", json.dumps({"samples": samples}), "application/json")
    for gpu, r in per_gpu.items():
        print(f"gpu {gpu} ({r.device}): {r.gemm_tflops:.3f} TFLOP/s, checksum {r.gemm_checksum!r}")


def heartbeat(client: Client, node: str) -> None:
    """Best effort: a heartbeat is about now, so it is never spooled."""
    try:
        client.http.post(f"{client.server}/api/v1/nodes/{quote(node)}/heartbeat/", json={})
    except httpx.HTTPError as exc:
        log.warning("heartbeat failed: %s", exc)


def run(args: argparse.Namespace, spool: Spool, client: Client) -> None:
    """Collect every interval, heartbeat, deliver; runs until SIGTERM/SIGINT."""
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    next_probe = time.monotonic() + args.probe_every if args.probe_every else None
    while not stop["now"]:
        started = time.monotonic()
        collect(args, spool)
        if next_probe is not None and started >= next_probe:
            probe(args, spool)
            next_probe = started + args.probe_every
        heartbeat(client, args.node)
        client.drain(spool)
        time.sleep(max(0.0, args.interval - (time.monotonic() - started)))


def parser() -> argparse.ArgumentParser:
    """The command line."""
    p = argparse.ArgumentParser(
        prog="kuae-agent", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("command", choices=("run", "once", "probe", "flush"))
    p.add_argument("--server", required=True, help="KUAE Ops base URL, e.g. https://ops.example")
    p.add_argument("--node", default=os.uname().nodename, help="this node's registered hostname")
    p.add_argument("--token-file", type=Path, help="file holding the agent's API token")
    p.add_argument("--exporter", default="http://127.0.0.1:9400/metrics")
    p.add_argument("--nvidia-smi", action="store_true", help="read nvidia-smi instead")
    p.add_argument("--interval", type=float, default=15.0)
    p.add_argument("--spool", type=Path, default=Path("/var/lib/kuae-agent/spool"))
    p.add_argument("--gpus", default="0-7", help="GPU indexes the CPU probe reports for")
    p.add_argument("--size", type=int, default=2048, help="GEMM size for the CPU probe")
    p.add_argument("--probe-every", type=float, default=0, help="seconds between probes in `run`")
    p.add_argument("--timeout", type=float, default=10.0)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `kuae-agent` console script."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    args = parser().parse_args(argv)
    token = (
        args.token_file.read_text().strip() if args.token_file else os.environ.get("KUAE_TOKEN", "")
    )
    if not token:
        print("kuae-agent: no token (set KUAE_TOKEN or --token-file)", file=sys.stderr)
        return 2
    spool = Spool(args.spool)
    client = Client(args.server, token, timeout_s=args.timeout)
    try:
        if args.command == "run":
            run(args, spool, client)
        elif args.command == "once":
            collect(args, spool)
            heartbeat(client, args.node)
        elif args.command == "probe":
            probe(args, spool)
        if args.command != "run":
            client.drain(spool)
    finally:
        client.close()
    left = len(spool.pending())
    if left:
        print(
            f"kuae-agent: {left} request(s) spooled in {args.spool}, to deliver later",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
