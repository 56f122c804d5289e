"""`make run` checks its port before it prints where the dashboard is (issue 42)."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from kuaeweb.port_free import main, port_problem


@pytest.fixture
def listening() -> Iterator[int]:
    """A port another server listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_taken_port_is_named_and_stops_with_how_to_choose_another(listening, capsys):
    assert "already in use" in port_problem(listening)
    assert main([str(listening)]) == 1
    said = capsys.readouterr().err
    assert f"port {listening}" in said and "PORT=8001 make run" in said


def test_a_free_port_passes(capsys):
    port = free_port()
    assert port_problem(port) == "" and main([str(port)]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("bad", [[], ["http"], ["0"], ["70000"]])
def test_a_port_that_is_not_one_is_refused(bad, capsys):
    assert main(bad) == 2 and "PORT must be a port number" in capsys.readouterr().err


def test_make_run_checks_before_it_prints_the_address():
    recipe = Path(__file__).resolve().parent.parent.joinpath("Makefile").read_text()
    run = re.search(r"^run:.*?\n((?:\t.*\n)+)", recipe, re.M)
    assert run is not None
    lines = run.group(1).splitlines()
    check = next(i for i, line in enumerate(lines) if "kuaeweb.port_free" in line)
    said = next(i for i, line in enumerate(lines) if "KUAE Ops on http" in line)
    assert check < said and check == 0  # before migrate, before the address
