"""The locks: production installs the runtime alone, `make` the runtime plus test tools, a GPU
node the agent's (httpx and what it needs)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==([^\s;\\]+)", re.M)


def _pins(name: str) -> dict[str, str]:
    text = (ROOT / name).read_text()
    return {canonicalize_name(k): v for k, v in PIN.findall(text)}


def _declared(deps: list[str]) -> dict[str, str]:
    """name → pinned version of `name[extra]==version` requirements."""
    out = {}
    for dep in deps:
        req = Requirement(dep)
        out[canonicalize_name(req.name)] = next(iter(req.specifier)).version
    return out


def test_runtime_lock_pins_every_dependency_and_no_test_tool() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime, dev = _pins("requirements.lock"), _pins("requirements-dev.lock")
    for name, version in _declared(project["dependencies"]).items():
        assert runtime.get(name) == version, f"requirements.lock: {name}"
        assert dev.get(name) == version, f"requirements-dev.lock: {name}"
    for name, version in _declared(project["optional-dependencies"]["dev"]).items():
        assert name not in runtime, f"{name} (a test tool) is in the production lock"
        assert dev.get(name, "").split("+")[0] == version.split("+")[0], name
    assert "torch" not in runtime and "nvidia-cublas-cu12" not in runtime
    hashed = (ROOT / "requirements.lock").read_text().count("--hash=sha256:")
    assert hashed >= len(runtime)  # every pin carries its hashes


def test_agent_lock_pins_httpx_and_its_needs_alone() -> None:
    agent = tomllib.loads((ROOT / "agent" / "pyproject.toml").read_text())["project"]
    pins, runtime = _pins("agent/requirements.lock"), _pins("requirements.lock")
    for name, version in _declared(agent["dependencies"]).items():
        assert pins.get(name) == version, f"agent/requirements.lock: {name}"
    # httpx's closure, nothing of the server's and no torch (the node image brings its own)
    assert set(pins) == {
        "httpx",
        "httpcore",
        "anyio",
        "idna",
        "certifi",
        "h11",
        "typing-extensions",
    }
    for name, version in pins.items():  # the same versions as the server's lock
        assert runtime.get(name) == version, name
    hashed = (ROOT / "agent" / "requirements.lock").read_text().count("--hash=sha256:")
    assert hashed >= len(pins)


def test_ldap_lock_is_the_runtime_plus_the_ldap_extra() -> None:
    """requirements-ldap.lock (LDAP sign-in, docs/sign-in.md): the runtime's pins unchanged,
    plus the ldap extra and what it needs; kept out of the dev lock, since python-ldap
    compiles against OpenLDAP's headers and `make` must work without them."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins, runtime = _pins("requirements-ldap.lock"), _pins("requirements.lock")
    extra = _declared(project["optional-dependencies"]["ldap"])
    assert set(extra) == {"django-auth-ldap", "python-ldap"}
    for name, version in extra.items():
        assert pins.get(name) == version, f"requirements-ldap.lock: {name}"
        assert name not in _pins("requirements-dev.lock"), name
    assert {name: pins[name] for name in runtime} == runtime
    assert set(pins) - set(runtime) == set(extra) | {"pyasn1", "pyasn1-modules"}
    hashed = (ROOT / "requirements-ldap.lock").read_text().count("--hash=sha256:")
    assert hashed >= len(pins)
