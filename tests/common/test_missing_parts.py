"""A test that needs a program or module that is not here skips saying which and how to
install it, and fails under CI, which installs every part (tests/binaries.py)."""

from __future__ import annotations

import json

import pytest

from tests.binaries import binaries_or_skip, debian_binary, module_or_skip

GONE = "kuae-no-such-program"


@pytest.fixture(params=["", "1"], ids=["here", "ci"])
def ci(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Outside CI, then under it (`CI=1`)."""
    if request.param:
        monkeypatch.setenv("CI", request.param)
    else:
        monkeypatch.delenv("CI", raising=False)
    return bool(request.param)


def _outcome(ci: bool) -> type[BaseException]:
    return pytest.fail.Exception if ci else pytest.skip.Exception


def test_a_missing_program_among_present_ones_is_named_with_its_package(ci: bool):
    with pytest.raises(_outcome(ci)) as missing:
        binaries_or_skip({"sh": "dash", GONE: "kuae-pkg"}, what="lab")
    said = str(missing.value)
    assert f"({GONE}): apt-get install kuae-pkg" in said and "dash" not in said


def test_present_programs_pass(ci: bool):
    binaries_or_skip({"sh": "dash"}, what="lab")  # neither skips nor fails


def test_a_missing_debian_binary(ci: bool):
    with pytest.raises(_outcome(ci), match="kuae-pkg"):
        debian_binary(GONE, package="kuae-pkg")


def test_a_missing_module_skips_or_fails_and_a_present_one_is_returned(ci: bool):
    with pytest.raises(_outcome(ci), match="kuae_no_such_module"):
        module_or_skip("kuae_no_such_module", install="pip install it")
    assert module_or_skip("json", install="") is json
