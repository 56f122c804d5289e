"""The Slurm lab checks every program it runs before it starts one (docs/slurm.md, Proven
against a real Slurm): the programs are read from the code that runs them — slurm/up.sh and
down.sh, slurmlab.py's helpers and the real tests' `lab.run` — and each must be in
`BINARIES`, the lab's skip check; a PATH without any one of them skips the real tests
naming it, and fails them under CI. Needs no Slurm: it runs everywhere."""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path

import pytest

from tests.scheduler.slurmlab import BINARIES, SCRIPTS, slurm_or_skip

HERE = Path(__file__).resolve().parent
# Bash's own words and what every Debian has (coreutils, grep, sed, hostname): never missing.
BASE = frozenset({
    "bash", "[", "set", "export", "echo", "break", "return", "wait", "kill", "cd", "true",
    "false", "test", "local", "cat", "chmod", "chown", "mkdir", "ln", "dd", "rm", "sed", "grep",
    "seq", "sort", "sleep", "hostname", "nproc", "id", "timeout",
})  # fmt: skip
# A command follows these words.
KEYWORDS = frozenset({"then", "do", "else", "elif", "done", "fi", "esac", "{", "}", "!", "time"})
WRAPPERS = frozenset({"nohup", "exec", "env"})  # run the command after them
REDIRECTS = frozenset({">", ">>", "<", "<<", ">&", "&>", "<&", "<<<"})
SEPARATORS = frozenset({";", "&", "&&", "|", "||", "(", ")", "()", ";;", "|&"})
SUBSTITUTION = re.compile(r"\$\(([^()]*)\)")
HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)")


def shell_commands(script: str) -> set[str]:
    """The programs a bash script runs: the first word of each simple command (past
    assignments, `nohup`, `timeout N`), those inside `$(…)` (in here-documents too, which
    bash expands), a `$VAR` command read from its assignment; functions it defines left out."""
    found: set[str] = set()
    values: dict[str, str] = {}
    functions = set(re.findall(r"^(\w+)\s*\(\)", script, re.M))
    lines = iter(script.splitlines())
    for line in lines:
        if line.lstrip().startswith("#"):
            continue
        for inner in SUBSTITUTION.findall(line):
            found |= shell_commands(inner)
        heredoc = HEREDOC.search(line)
        plain = re.sub(r"\$\{[^}]*\}", "V", SUBSTITUTION.sub("X", line))
        lexer = shlex.shlex(plain, posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        expect, skip = True, 0
        for token in lexer:
            if skip:
                skip -= 1
            elif token in SEPARATORS:
                expect = True
            elif token in REDIRECTS:
                skip = 1
            elif not expect:
                continue
            elif re.fullmatch(r"\w+=.*", token):  # an assignment before (or as) the command
                name, value = token.split("=", 1)
                values[name] = value
            elif token == "timeout":
                skip = 1  # its duration; the command follows
            elif token in KEYWORDS or token in WRAPPERS:
                continue
            elif token in ("for", "case"):
                expect = False  # `for x in …;` names no command until `do`
            else:
                if token.startswith("$"):
                    token = values.get(token[1:], token).split(" ")[0]
                if token not in functions:
                    found.add(token)
                expect = False
        if heredoc:  # its body is text, bar the substitutions bash expands in it
            for body in lines:
                if body.strip() == heredoc.group(1):
                    break
                for inner in SUBSTITUTION.findall(body):
                    found |= shell_commands(inner)
    return found


def python_commands(source: str) -> set[str]:
    """The programs a Python module runs by name: `subprocess.run([...])`/`Popen([...])`
    with a literal first word, and `….run("prog", …)` (the lab's own `run`)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
        if name not in ("run", "Popen") or not node.args:
            continue
        first = node.args[0]
        if isinstance(first, ast.List) and first.elts:
            first = first.elts[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            found.add(first.value)
    return found


def lab_programs() -> set[str]:
    """Every program the lab and its tests run, read from their code."""
    found = set()
    for script in sorted(SCRIPTS.glob("*.sh")):
        found |= shell_commands(script.read_text())
    for module in ("slurmlab.py", "test_slurm_real.py"):
        found |= python_commands((HERE / module).read_text())
    return found


def test_the_lab_checks_every_program_it_runs():
    programs = lab_programs()
    # what the reading must find, else it reads nothing and proves nothing
    assert {"munged", "slurmdbd", "slurmctld", "slurmd", "slurmrestd"} <= programs
    assert {"mysql", "sacctmgr", "sinfo", "ss", "scancel", "scontrol", "sbatch"} <= programs
    unchecked = sorted(programs - BASE - set(BINARIES))
    assert unchecked == [], f"add to BINARIES in tests/scheduler/slurmlab.py: {unchecked}"
    unused = sorted(set(BINARIES) - programs)
    assert unused == [], f"BINARIES names programs the lab no longer runs: {unused}"


def test_the_reading_finds_commands_where_bash_runs_them():
    script = """#!/bin/bash
# not-a-command here
S=${1:?base dir}; DB="mysql -h x"
f() { ss -ltn | grep -q "a:1 \\|b:2" && return 0; }
$DB -e "SELECT 1"
nohup munged -F >$S/log 2>&1 & echo $! > $S/pid
cat > $S/conf <<EOF
NodeHostname=$(hostname) CPUs=$(nproc)
slurmd is text here
EOF
for _ in $(seq 1 3); do [ "$(sinfo -h | sort -u)" = "idle" ] && break; done
SLURM_CONF=$S/c timeout 10 scancel --quiet 2>/dev/null && sleep 1
"""
    assert shell_commands(script) == {
        "mysql", "ss", "grep", "munged", "echo", "cat", "hostname", "nproc", "seq", "[",
        "sinfo", "sort", "break", "scancel", "sleep", "return",
    }  # fmt: skip
    module = 'subprocess.run(["bash", up]); lab.run("squeue", "-h"); Popen(["slurmd", "-D"])'
    assert python_commands(module) == {"bash", "squeue", "slurmd"}


@pytest.mark.parametrize("gone", sorted(BINARIES))
def test_a_path_without_one_of_them_skips_naming_it_and_fails_under_ci(
    gone: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    for name in BINARIES:
        if name != gone:
            (tmp_path / name).symlink_to("/bin/true")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        slurm_or_skip()
    assert f"({gone})" in str(skipped.value)
    assert f"apt-get install {BINARIES[gone]}" in str(skipped.value)
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception) as failed:
        slurm_or_skip()
    assert gone in str(failed.value) and "CI needs" in str(failed.value)
