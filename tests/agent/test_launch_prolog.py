"""`kuae-agent launch -- CMD` and `kuae-agent prolog` against the real app (live server)."""

from __future__ import annotations

import socket
import sys
import threading
import time

import pytest
from django.utils import timezone

from apps.accounts.services import token_issue, user_create_or_update
from apps.fleet.services import agent_scope_set
from apps.health.models import CheckResult
from apps.jobs.models import Job
from kuae_agent.cli import main
from kuae_agent.launch import REFUSED, expand_hostlist
from tests.support import closed_port

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def env(live_server, nodes, monkeypatch) -> dict[str, str]:  # noqa: ANN001
    """A launcher's environment: a node token for gpu000-gpu001, KUAE_* and Slurm's."""
    user = user_create_or_update(username="launcher", role="agent")
    agent_scope_set(user=user, cluster="c1", hostlist="gpu[000-001]")
    values = {
        "KUAE_SERVER": live_server.url,
        "KUAE_TOKEN": token_issue(user=user),
        "KUAE_CLUSTER": "c1",
        "SLURM_JOB_ID": "31337",
        "SLURM_JOB_NAME": "llama-8b",
        "SLURM_JOB_NODELIST": "gpu[000-001]",
        "SLURM_GPUS_ON_NODE": "8",
        "SLURM_PROCID": "0",
    }
    for name in ("KUAE_JOB_ID", "RANK", "KUAE_NODE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


def cmd(code: int, marker=None) -> list[str]:  # noqa: ANN001
    """A command that records KUAE_JOB_ID in `marker` and exits with `code`."""
    write = f"open({str(marker)!r}, 'w').write(os.environ.get('KUAE_JOB_ID', ''))" if marker else ""
    return ["--", sys.executable, "-c", f"import os, sys\n{write}\nsys.exit({code})"]


def test_launch_registers_runs_and_records_the_end(env, tmp_path):
    marker = tmp_path / "ran"
    assert main(["launch", "--model-name", "llama-3-8b", *cmd(0, marker)]) == 0
    job = Job.objects.get(external_id="31337")
    assert marker.read_text() == str(job.pk)  # CMD's Reporter needs no lookup
    assert (job.name, job.status, job.gpu_count, job.model_name) == (
        "llama-8b",
        "completed",
        16,
        "llama-3-8b",
    )
    assert sorted(job.nodes.values_list("hostname", flat=True)) == ["gpu000", "gpu001"]
    assert job.started_at is not None and job.ended_at is not None
    # Requeued: the same Slurm id finds the same job; CMD's exit code is the launcher's.
    assert main(["launch", *cmd(7)]) == 7
    assert Job.objects.filter(external_id="31337").count() == 1
    assert Job.objects.get(external_id="31337").status == "failed"


def test_launch_refuses_a_failing_node_unless_forced(env, nodes, tmp_path):
    node = nodes[1]
    node.state, node.state_reason = "drained", "xid 79"
    node.save(update_fields=["state", "state_reason"])
    marker = tmp_path / "ran"
    assert main(["launch", *cmd(0, marker)]) == REFUSED
    assert not marker.exists()
    assert Job.objects.get(external_id="31337").status == "cancelled"
    assert main(["launch", "--force", *cmd(0, marker)]) == 0
    assert marker.exists() and Job.objects.get(external_id="31337").status == "completed"


def test_launch_runs_the_command_when_kuae_is_down(env, monkeypatch, tmp_path):
    monkeypatch.setenv("KUAE_SERVER", f"http://127.0.0.1:{closed_port()}")
    marker = tmp_path / "ran"
    assert main(["launch", "--timeout", "1", *cmd(5, marker)]) == 5
    assert marker.exists() and marker.read_text() == ""


def test_hostlists():
    assert expand_hostlist("gpu[000-002,7],login1,r[1-2]n[01-02]") == [
        "gpu000", "gpu001", "gpu002", "gpu7", "login1", "r1n01", "r1n02", "r2n01", "r2n02"
    ]  # fmt: skip
    with pytest.raises(ValueError, match="more than"):
        expand_hostlist("n[0-99999999]")
    with pytest.raises(ValueError):
        expand_hostlist("gpu[1-")


# --- prolog --------------------------------------------------------------------------------


@pytest.fixture
def prolog_env(env, monkeypatch) -> dict[str, str]:  # noqa: ANN001
    monkeypatch.setenv("SLURMD_NODENAME", "gpu001")  # as Slurm sets it for the prolog
    return env


def prolog(*args: str) -> tuple[int, float]:
    started = time.monotonic()
    code = main(["prolog", *args])
    return code, time.monotonic() - started


def test_prolog_admits_a_healthy_node(prolog_env, capsys):
    assert prolog()[0] == 0
    assert "gpu001 admitted (state healthy)" in capsys.readouterr().err


def test_prolog_refuses_a_node_not_healthy_or_failing(prolog_env, nodes, capsys):
    node = nodes[1]
    now = timezone.now()
    CheckResult.objects.create(cluster=node.cluster, kind="xid", target="gpu:gpu001/3", node=node,
                               status="fail", message="XID 79", at=now, since=now)  # fmt: skip
    assert prolog()[0] == 1
    assert "gpu001 refused by KUAE: failed the xid check: XID 79" in capsys.readouterr().err
    CheckResult.objects.all().delete()
    node.state = "suspect"
    node.save(update_fields=["state"])
    assert prolog()[0] == 1
    assert prolog("--node", "gpu000")[0] == 0  # KUAE_NODE/--node wins over SLURMD_NODENAME


def test_prolog_fails_open_when_kuae_does_not_answer(prolog_env, monkeypatch, capsys):
    monkeypatch.setenv("KUAE_SERVER", f"http://127.0.0.1:{closed_port()}")
    code, took = prolog()
    assert code == 0 and took < 5
    assert "admitted without a check (fail-open): KUAE did not answer" in capsys.readouterr().err
    # A server that accepts the connection and never answers: still within 5 s.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held: list[socket.socket] = []
    threading.Thread(target=lambda: held.append(listener.accept()[0]), daemon=True).start()
    monkeypatch.setenv("KUAE_SERVER", f"http://127.0.0.1:{listener.getsockname()[1]}")
    code, took = prolog()
    assert code == 0 and 2 < took < 5.0
    listener.close()
    # A token KUAE refuses (here: another node's) is no verdict either: fail-open, logged.
    monkeypatch.setenv("KUAE_SERVER", prolog_env["KUAE_SERVER"])
    assert prolog("--node", "gpu005")[0] == 0
    assert "HTTP 403" in capsys.readouterr().err
