"""`kuae-agent`: collect on this node, spool to disk, deliver to KUAE Ops.

    kuae-agent run   --server URL --node HOST [--exporter URL | --nvidia-smi | --mtml |
                     --mthreads-gmi] [--interval 15] [--kmsg | --kmsg-file PATH]
                     [--kmsg-mthreads] [--fabric] [--host [--mount PATH …]]
                     [--sysfs ROOT] [--procfs ROOT] [--rootfs ROOT]
    kuae-agent once  … (collect and deliver one round, for cron or a test)
    kuae-agent probe --server URL --node HOST [--gpus 0-7]
    kuae-agent flush --server URL (deliver what is spooled; a Reporter's spool too)
    kuae-agent prolog … (Slurm's Prolog=: may a job start on this node? `prolog --help`)
    kuae-agent launch … -- CMD (run CMD as a KUAE job, preflight first; `launch --help`)
    kuae-agent stacks --job ID (post the stacks of a job's ranks here, by py-spy; `stacks --help`)

--kmsg follows the kernel log for XIDs (`journalctl -k`, or /dev/kmsg where there is no
journal) and sends every `NVRM: Xid` line once, keeping its position in --kmsg-cursor;
--kmsg-file reads a file instead (a kern.log, a kmsg dump, a test's file). --kmsg-mthreads
also sends the Moore Threads driver's warning and error lines, as events the server judges
as unknown faults (Moore Threads publish no catalogue of them).

--mtml reads Moore Threads GPUs through MTML (pip install 'kuae-agent[mtml]'; needs the
driver's libmtml.so); --mthreads-gmi reads the table of the `mthreads-gmi` command
(utilisation, memory and temperature only).

--fabric also sends the InfiniBand/RoCE ports of ROOT/class/infiniband (--sysfs, default
/sys): state, rate and error counters, as `ports` in a telemetry batch of their own.

--host also sends what the host says about itself, as `host` in that batch: EDAC memory
controllers and the PCIe links and AER errors of GPUs and NICs (under --sysfs), the real
filesystems of ROOT/self/mounts (--procfs, default /proc; sizes by statvfs under --rootfs,
default /), the required mounts (--mount, repeated, or KUAE_MOUNTS, comma-separated) first,
and the clock's offset and sync state (adjtimex).

The server is --server or KUAE_SERVER; the token comes from --token-file, or the KUAE_TOKEN
environment variable (kept out of `ps`), or the file KUAE_TOKEN_FILE names.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import httpx

from kuae_agent import config
from kuae_agent.client import Client
from kuae_agent.fabric import FabricReader
from kuae_agent.gmi import read_mthreads_gmi
from kuae_agent.host import HostReader
from kuae_agent.kernellog import FileLog, Journal, KmsgDevice, XidFollower
from kuae_agent.mtml import MtmlReader, MtmlUnavailable
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


def collect(
    args: argparse.Namespace,
    spool: Spool,
    fabric: FabricReader | None = None,
    mtml: MtmlReader | None = None,
    host: HostReader | None = None,
) -> bool:
    """Read the node's source once and spool what it said; False when it could not be read.
    With `fabric` and `host`, the ports and the host readings go together in a batch of their
    own, whether or not the GPUs could be read (and one the server refuses never costs the
    GPUs' samples). `mtml` is the MTML reader a `run` keeps between rounds (else one is made
    for this round)."""
    now = dt.datetime.now(dt.UTC)
    node_batch: dict[str, list[dict[str, object]]] = {}
    if fabric is not None:
        node_batch["ports"] = fabric.read(node=args.node, ts=now)
    if host is not None:
        node_batch["host"] = host.read(node=args.node, ts=now)
    node_batch = {key: items for key, items in node_batch.items() if items}
    if node_batch:
        spool.put("/api/v1/ingest/telemetry/", json.dumps(node_batch), "application/json")
    try:
        if args.nvidia_smi or args.mtml or args.mthreads_gmi:
            if args.mtml:
                samples = (mtml or MtmlReader()).read(node=args.node, ts=now)
            elif args.mthreads_gmi:
                samples = read_mthreads_gmi(node=args.node, ts=now, binary=args.gmi_binary)
            else:
                samples = read_nvidia_smi(node=args.node, ts=now)
            if not samples:
                log.error("the node's GPU source reported no GPU")
                return False
            spool.put(
                "/api/v1/ingest/telemetry/", json.dumps({"samples": samples}), "application/json"
            )
        else:
            text = read_exporter(args.exporter)
            path = f"/api/v1/ingest/prometheus/?node={quote(args.node)}&ts={quote(_iso(now))}"
            spool.put(path, text, "text/plain")
    except (httpx.HTTPError, OSError, ValueError, subprocess.SubprocessError) as exc:
        log.error("could not read the node's telemetry: %s", exc)
        return False
    except MtmlUnavailable as exc:
        log.error("%s", exc)
        return False
    return True


def probe(args: argparse.Namespace, spool: Spool) -> bool:
    """Run the GEMM probe on each GPU and spool its figures as telemetry; False (and nothing
    reported) without a GPU backend — a CPU's figures are never reported as a GPU's."""
    results = run_probe(n=args.size)
    if not results:
        message = "no GPU backend (torch with CUDA): nothing reported per GPU"
        log.warning("probe: %s", message)
        print(f"kuae-agent probe: {message}")
        return False
    now = _iso(dt.datetime.now(dt.UTC))
    wanted = set(_gpus(args.gpus)) if args.gpus else None
    per_gpu = {i: r for i, r in enumerate(results) if wanted is None or i in wanted}
    samples = [
        {
            "node": args.node,
            "gpu": gpu,
            "ts": now,
            "metrics": {"gemm_tflops": r.gemm_tflops, "gemm_checksum": r.gemm_checksum},
        }
        for gpu, r in per_gpu.items()
    ]
    if samples:
        body = json.dumps({"samples": samples})
        spool.put("/api/v1/ingest/telemetry/", body, "application/json")
    for gpu, r in per_gpu.items():
        print(f"gpu {gpu} ({r.device}): {r.gemm_tflops:.3f} TFLOP/s, checksum {r.gemm_checksum!r}")
    return True


def kernel_log(args: argparse.Namespace, spool: Spool) -> XidFollower | None:
    """The kernel-log follower the options ask for, if any."""
    if args.kmsg_file:
        reader: FileLog | KmsgDevice | Journal = FileLog(args.kmsg_file)
    elif args.kmsg:
        journal = args.kmsg == "journal" or (args.kmsg == "auto" and shutil.which(args.journalctl))
        reader = Journal(args.journalctl, args.kmsg_backfill) if journal else KmsgDevice()
    else:
        return None
    cursor = args.kmsg_cursor or args.spool / "kmsg.cursor"
    return XidFollower(
        reader,
        node=args.node,
        spool=spool,
        cursor_file=cursor,
        backfill_s=args.kmsg_backfill,
        mthreads=args.kmsg_mthreads,
    )


def host_reader(args: argparse.Namespace) -> HostReader | None:
    """The host reader `--host` asks for, over the trees and mounts the options name."""
    if not args.host:
        return None
    mounts = args.mount if args.mount else config.mounts()
    return HostReader(sysfs=args.sysfs, procfs=args.procfs, rootfs=args.rootfs, mounts=mounts)


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
    follower = kernel_log(args, spool)
    fabric = FabricReader(args.sysfs) if args.fabric else None
    mtml = MtmlReader() if args.mtml else None
    host = host_reader(args)
    while not stop["now"]:
        started = time.monotonic()
        collect(args, spool, fabric, mtml, host)
        if follower is not None:
            follower.poll()
        if next_probe is not None and started >= next_probe:
            probe(args, spool)
            next_probe = started + args.probe_every
        heartbeat(client, args.node)
        client.drain(spool)
        time.sleep(max(0.0, args.interval - (time.monotonic() - started)))
    if mtml is not None:
        mtml.close()


def parser() -> argparse.ArgumentParser:
    """The command line."""
    p = argparse.ArgumentParser(
        prog="kuae-agent", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "command", choices=("run", "once", "probe", "flush", "prolog", "launch", "stacks")
    )
    p.add_argument(
        "--server",
        default=config.server(),
        help="KUAE Ops base URL, e.g. https://ops.example (default KUAE_SERVER)",
    )
    p.add_argument("--node", default=os.uname().nodename, help="this node's registered hostname")
    p.add_argument("--token-file", type=Path, help="file holding the agent's API token")
    p.add_argument("--exporter", default="http://127.0.0.1:9400/metrics")
    gpus = p.add_mutually_exclusive_group()
    gpus.add_argument("--nvidia-smi", action="store_true", help="read nvidia-smi instead")
    gpus.add_argument(
        "--mtml", action="store_true", help="read Moore Threads GPUs through MTML instead"
    )
    gpus.add_argument(
        "--mthreads-gmi", action="store_true", help="read the mthreads-gmi table instead"
    )
    p.add_argument("--gmi-binary", default="mthreads-gmi", help=argparse.SUPPRESS)
    p.add_argument("--interval", type=float, default=15.0)
    p.add_argument("--spool", type=Path, default=Path("/var/lib/kuae-agent/spool"))
    p.add_argument("--gpus", default="", help="GPU indexes the probe reports (default: all)")
    p.add_argument("--size", type=int, default=8192, help="GEMM size for the probe")
    p.add_argument("--probe-every", type=float, default=0, help="seconds between probes in `run`")
    p.add_argument("--timeout", type=float, default=10.0)
    p.add_argument(
        "--kmsg",
        nargs="?",
        const="auto",
        choices=("auto", "journal", "kmsg"),
        help="follow the kernel log for XIDs: journalctl -k (auto when present) or /dev/kmsg",
    )
    p.add_argument("--kmsg-file", type=Path, help="read XIDs from this file instead")
    p.add_argument(
        "--kmsg-mthreads",
        action="store_true",
        help="also send the Moore Threads driver's warning and error lines (unknown faults)",
    )
    p.add_argument("--kmsg-cursor", type=Path, help="position file (default SPOOL/kmsg.cursor)")
    p.add_argument(
        "--kmsg-backfill",
        type=float,
        default=3600,
        help="on a first start, XIDs at most this many seconds old are sent ('inf': all)",
    )
    p.add_argument(
        "--fabric", action="store_true", help="also send the InfiniBand/RoCE ports' state"
    )
    p.add_argument(
        "--host",
        action="store_true",
        help="also send the host's memory, PCIe, filesystem and clock readings",
    )
    p.add_argument(
        "--mount",
        action="append",
        default=[],
        metavar="PATH",
        help="a required mount, sent first (repeat it; default KUAE_MOUNTS, comma-separated)",
    )
    p.add_argument(
        "--sysfs", type=Path, default=Path("/sys"), help="where sysfs is (a test's tree)"
    )
    p.add_argument(
        "--procfs", type=Path, default=Path("/proc"), help="where procfs is (a test's tree)"
    )
    p.add_argument(
        "--rootfs",
        type=Path,
        default=Path("/"),
        help="where the mounts are seen, for their sizes (a test's tree)",
    )
    p.add_argument("--journalctl", default="journalctl", help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `kuae-agent` console script."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["prolog"]:
        from kuae_agent import prolog

        return prolog.main(argv[1:])
    if argv[:1] == ["launch"]:
        from kuae_agent import launch

        return launch.main(argv[1:])
    if argv[:1] == ["stacks"]:
        from kuae_agent import stacks

        return stacks.main(argv[1:])
    args = parser().parse_args(argv)
    if not args.server:
        print("kuae-agent: no server (set KUAE_SERVER or --server)", file=sys.stderr)
        return 2
    try:
        token = config.token(token_file=args.token_file)
    except OSError as exc:
        print(f"kuae-agent: cannot read the token: {exc}", file=sys.stderr)
        return 2
    if not token:
        print(
            "kuae-agent: no token (set KUAE_TOKEN, KUAE_TOKEN_FILE or --token-file)",
            file=sys.stderr,
        )
        return 2
    spool = Spool(args.spool)
    client = Client(args.server, token, timeout_s=args.timeout)
    status = 0
    try:
        if args.command == "run":
            run(args, spool, client)
        elif args.command == "once":
            fabric = FabricReader(args.sysfs) if args.fabric else None
            collect(args, spool, fabric, host=host_reader(args))
            follower = kernel_log(args, spool)
            if follower is not None:
                follower.poll()
            heartbeat(client, args.node)
        elif args.command == "probe":
            status = 0 if probe(args, spool) else 1
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
    return status


if __name__ == "__main__":
    sys.exit(main())
