"""A real Slurm 22.05 on this machine for the tests (slurm/up.sh: munge, slurmdbd on the
local MariaDB, slurmctld, two slurmd with 8 fake GPUs each, slurmrestd on a unix socket)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.binaries import absent, binaries_or_skip

SCRIPTS = Path(__file__).resolve().parent / "slurm"
# Every program the lab runs beyond bash and coreutils — slurm/up.sh and down.sh, the helpers
# below and the tests' `lab.run` — with the Debian package that holds it (test_slurm_lab.py
# reads them all from the code and fails on one missing here).
BINARIES = {
    "munged": "munge",
    "slurmdbd": "slurmdbd",
    "slurmctld": "slurmctld",
    "slurmd": "slurmd",
    "slurmrestd": "slurmrestd",
    **{
        name: "slurm-client"
        for name in ("sacctmgr", "sinfo", "sbatch", "scontrol", "squeue", "scancel", "sacct")
    },
    "mysql": "mariadb-client",  # the accounting database's, on the MariaDB server
    "ss": "iproute2",  # up.sh waits for the daemons' ports with it
}
ACCOUNTING_DB = "kuae_slurm_test"


def slurm_or_skip() -> None:
    """Skip (fail under CI) when a program the lab runs is not on PATH (`BINARIES`), when
    not root, or when MariaDB does not answer on 127.0.0.1."""
    binaries_or_skip(BINARIES, what="Slurm lab")
    if os.geteuid() != 0:
        absent("Slurm's daemons run as root here")
    if subprocess.run(
        ["mysql", "-h", "127.0.0.1", "-u", "root", "-e", "SELECT 1"],
        capture_output=True,
        check=False,
    ).returncode:
        absent("no MariaDB on 127.0.0.1:3306 for slurmdbd (apt-get install mariadb-server)")


@dataclass
class SlurmLab:
    """One running lab Slurm and the commands the tests use on it."""

    base: Path

    @property
    def conf(self) -> str:
        """Its slurm.conf: what a `cli` connection names."""
        return str(self.base / "etc" / "slurm.conf")

    @property
    def rest_url(self) -> str:
        """slurmrestd's unix socket, as a `rest` connection names it."""
        return f"unix:{self.base / 'rest' / 'slurmrestd.sock'}"

    def run(self, *args: str, check: bool = True) -> str:
        """A Slurm client command against this lab; its stdout."""
        done = subprocess.run(
            args,
            env={**os.environ, "SLURM_CONF": self.conf},
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if check and done.returncode:
            raise AssertionError(f"{' '.join(args)}: {done.stderr or done.stdout}")
        return done.stdout

    def node(self, name: str) -> tuple[str, str]:
        """(`sinfo`'s long state, reason) of a node: `('drained', 'kuae #3: …')`; the
        not-responding marker (`idle*` while slurmctld re-pings it) is left out."""
        out = self.run("sinfo", "-h", "-N", "-n", name, "-o", "%T|%E").strip().splitlines()[0]
        state, reason = out.split("|", 1)
        return state.rstrip("*~#!%$@^-"), reason

    def submit(self, *args: str) -> str:
        """`sbatch --parsable ARGS` (its output thrown away); the job id."""
        return self.run("sbatch", "--parsable", "-o", "/dev/null", *args).strip().split(";")[0]

    def wait(self, predicate, timeout_s: float = 20.0) -> None:  # noqa: ANN001
        """Poll `predicate()` until it is true (Slurm acts asynchronously)."""
        deadline = time.monotonic() + timeout_s
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"Slurm did not get there in {timeout_s} s")
            time.sleep(0.25)

    def stop_controller(self) -> None:
        """Stop slurmctld (its state stays in the lab's state folder)."""
        pid = int((self.base / "slurmctld.pidx").read_text())
        os.kill(pid, 15)
        self.wait(lambda: not Path(f"/proc/{pid}").exists())

    def start_controller(self) -> None:
        """Start slurmctld again from its saved state and wait until it answers."""
        log = open(self.base / "log" / "slurmctld.restart.out", "ab")  # noqa: SIM115
        proc = subprocess.Popen(
            ["slurmctld", "-D"], env={**os.environ, "SLURM_CONF": self.conf}, stdout=log, stderr=log
        )
        (self.base / "slurmctld.pidx").write_text(str(proc.pid))
        self.wait(lambda: self.run("scontrol", "ping", check=False).find("UP") >= 0, 30)


def lab_up() -> SlurmLab:
    """Bring a fresh lab up in a new folder (its accounting database too). The folder is
    readable by all: slurmrestd runs as `nobody` and reads slurm.conf."""
    base = Path(tempfile.mkdtemp(prefix="kuae-slurm-"))
    base.chmod(0o755)
    subprocess.run(
        [
            "mysql",
            "-h",
            "127.0.0.1",
            "-u",
            "root",
            "-e",
            f"DROP DATABASE IF EXISTS {ACCOUNTING_DB}",
        ],
        check=True,
    )
    lab = SlurmLab(base)
    try:
        subprocess.run(
            ["bash", str(SCRIPTS / "up.sh"), str(base)],
            env={**os.environ, "SLURM_TEST_DB": ACCOUNTING_DB},
            check=True,
            capture_output=True,
            timeout=120,
        )
        lab.wait(lambda: (base / "rest" / "slurmrestd.sock").exists(), 10)
    except BaseException:
        lab_down(lab)
        raise
    return lab


def lab_down(lab: SlurmLab) -> None:
    """Stop everything the lab started and remove its folder."""
    subprocess.run(["bash", str(SCRIPTS / "down.sh"), str(lab.base)], check=False, timeout=60)
    shutil.rmtree(lab.base, ignore_errors=True)
