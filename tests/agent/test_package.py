"""`pip install ./agent` in a fresh virtualenv brings no Django (issue 13, docs/agent.md).

Offline and honest: the agent is built into a wheel here (`pip wheel --no-deps
--no-build-isolation`, with this venv's setuptools), its dependencies are repacked as wheels
from the distributions installed in this venv (their files, as installed), and a new empty
virtualenv installs the agent with `--no-index --find-links` that folder. Resolution runs
on the wheel's own metadata: had the agent required Django (or anything outside httpx and
what httpx needs), the install would fail for want of it. Then the new venv imports the
Reporter and runs `kuae-agent --help`, and holds no Django, Celery or NumPy."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import venv
import zipfile
from email.parser import Parser
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
REQUIRED = {"httpx", "httpcore", "anyio", "idna", "certifi", "h11", "typing-extensions"}


def repack(name: str, folder: Path) -> Path:
    """A wheel of the installed distribution `name`, made of its installed files."""
    dist = metadata.distribution(name)
    tag = "py3-none-any"
    wheel = folder / f"{dist.metadata['Name'].replace('-', '_')}-{dist.version}-{tag}.whl"
    records = []
    with zipfile.ZipFile(wheel, "w") as out:
        for file in dist.files or []:
            path = Path(str(dist.locate_file(file)))
            if file.suffix == ".pyc" or file.name == "RECORD" or ".." in file.parts:
                continue
            if not path.is_file():
                continue
            data = path.read_bytes()
            out.writestr(str(file), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            records.append(f"{file},sha256={digest.decode()},{len(data)}")
        info = next(p for p in (dist.files or []) if p.name == "METADATA").parent
        records.append(f"{info}/RECORD,,")
        out.writestr(f"{info}/RECORD", "\n".join(records) + "\n")
    return wheel


def requires(name: str) -> set[str]:
    """What the installed `name` needs here (markers evaluated, extras left out)."""
    found = set()
    for line in metadata.requires(name) or []:
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            found.add(req.name.lower().replace("_", "-"))
    return found


def test_pip_install_agent_brings_no_django(tmp_path):
    house = tmp_path / "wheels"
    house.mkdir()
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "-w", str(house), str(ROOT / "agent")],
        check=True,
    )  # fmt: skip
    built = next(house.glob("kuae_agent-*.whl"))
    with zipfile.ZipFile(built) as whl:
        info = next(n for n in whl.namelist() if n.endswith(".dist-info/METADATA"))
        meta = Parser().parsestr(whl.read(info).decode())
        assert not any(n.startswith(("apps/", "kuaeweb/")) for n in whl.namelist())
    assert meta.get_all("Requires-Dist") == [
        "httpx==0.28.1",
        'torch>=2.1; extra == "gpu"',
        'py-spy==0.4.3; extra == "stacks"',
        'mthreads-ml-py==2.4.3; extra == "mtml"',
    ]
    # httpx and what it needs, as this venv has them installed.
    closure, todo = set(), ["httpx"]
    while todo:
        name = todo.pop()
        if name not in closure:
            closure.add(name)
            todo += sorted(requires(name))
    assert closure <= REQUIRED, closure
    for name in closure:
        repack(name, house)
    fresh = tmp_path / "venv"
    venv.create(fresh, with_pip=True, clear=True)
    py = fresh / "bin" / "python"
    install = subprocess.run(
        [str(py), "-m", "pip", "install", "--quiet", "--no-index", "--find-links", str(house),
         str(built)],
        capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "PIP_NO_CACHE_DIR": "1"},
    )  # fmt: skip
    assert install.returncode == 0, install.stdout + install.stderr
    listed = subprocess.run(
        [str(py), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True,
        check=True,
    ).stdout.lower()  # fmt: skip
    names = {line.split("==")[0] for line in listed.split()}
    assert "kuae-agent" in names and "httpx" in names
    assert not names & {"django", "djangorestframework", "celery", "numpy", "torch"}, names
    smoke = "from kuae_agent.report import Reporter; import kuae_agent.cli, kuae_agent.launch"
    smoke += "; import kuae_agent.prolog, sys; assert 'django' not in sys.modules"
    subprocess.run([str(py), "-c", smoke], check=True, cwd=tmp_path)
    help_text = subprocess.run(
        [str(fresh / "bin" / "kuae-agent"), "launch", "--help"], capture_output=True, text=True,
        check=True,
    ).stdout  # fmt: skip
    assert "preflight" in help_text
