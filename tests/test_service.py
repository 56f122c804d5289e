"""Service endpoints, settings from the environment, the OpenAPI schema, static assets."""

from __future__ import annotations

import filecmp
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.support import closed_port

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.embedded
def test_healthz_and_readyz(client, users):
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {"status": "ok", "broker": "ok"}  # anonymous: ok / not ok only
    client.force_login(users["mia"])
    body = client.get("/readyz").json()
    assert body["database"] == "ok" and body["broker_ok"] is True, body


def test_readyz_reports_a_dead_broker_without_failing(client, users, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    body = client.get("/readyz")
    assert body.status_code == 200 and body.json() == {"status": "ok", "broker": "not ok"}
    client.force_login(users["mia"])
    body = client.get("/readyz")
    assert body.status_code == 200 and body.json()["broker_ok"] is False


def test_schema_builds_without_warnings(tmp_path):
    out = tmp_path / "schema.yml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    text = out.read_text()
    for path in (
        "/api/v1/nodes/{hostname}/state/",
        "/api/v1/jobs/{id}/metrics/",
        "/api/v1/clusters/",
    ):
        assert path in text.replace("{pk}", "{id}")


def test_swagger_ui_is_served_locally(client, users):
    client.force_login(users["mia"])
    html = client.get("/api/docs/").content.decode()
    assert "swagger-ui" in html and "cdn" not in html.lower()
    assert "/static/drf_spectacular_sidecar/" in html


def test_vendored_plotly_is_the_pinned_packages_copy():
    import plotly

    shipped = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    assert filecmp.cmp(shipped, ROOT / "static" / "vendor" / "plotly.min.js", shallow=False)


def _start(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "KUAE_", "DATABASE_URL"))
    }
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_production_settings_pass_check_deploy():
    result = _start(
        {
            "DJANGO_SECRET_KEY": "x" * 64 + "-production-secret-0123456789abcdefghijklmnop",
            "DJANGO_ALLOWED_HOSTS": "ops.example.com",
        }
    )
    assert result.returncode == 0, result.stdout + result.stderr


OIDC = {
    "KUAE_OIDC_ISSUER": f"http://127.0.0.1:{closed_port()}",  # nothing listens there
    "KUAE_OIDC_CLIENT_ID": "kuae-ops",
    "KUAE_OIDC_CLIENT_SECRET": "secret",
    "KUAE_ROLE_GROUPS": "operator=gpu-oncall",
}


def test_oidc_provider_down_does_not_stop_start_up():
    """The provider's endpoints are discovered at the first sign-in, not at start-up."""
    result = _start(
        {
            "DJANGO_SECRET_KEY": "x" * 64 + "-production-secret-0123456789abcdefghijklmnop",
            "DJANGO_ALLOWED_HOSTS": "ops.example.com",
            **OIDC,
        }
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DATABASE_URL": "postgres://kuae@db.example/kuae"}, "DJANGO_SECRET_KEY"),
        ({"DJANGO_DEBUG": "maybe"}, "DJANGO_DEBUG"),
        ({"KUAE_DEMO": "1", "DATABASE_URL": "mysql2://nope"}, "DATABASE_URL"),
        ({"KUAE_DEMO": "1", "CELERY_BROKER_URL": "amqp://guest@localhost//"}, "CELERY_BROKER_URL"),
        ({"KUAE_DEMO": "1", "KUAE_MAX_BODY_BYTES": "lots"}, "KUAE_MAX_BODY_BYTES"),
        ({"DJANGO_SECRET_KEY_FILE": "/nonexistent/secret"}, "DJANGO_SECRET_KEY_FILE"),
        # OpenID Connect sign-in (docs/sign-in.md): half a configuration stops start-up
        ({"KUAE_DEMO": "1", "KUAE_OIDC_ISSUER": "https://sso.example"}, "KUAE_OIDC_CLIENT_ID"),
        ({"KUAE_DEMO": "1", **OIDC, "KUAE_ROLE_GROUPS": ""}, "KUAE_ROLE_GROUPS maps no group"),
        ({"KUAE_DEMO": "1", **OIDC, "KUAE_ROLE_GROUPS": "boss=x"}, "KUAE_ROLE_GROUPS"),
        (
            {"KUAE_DEMO": "1", **OIDC, "KUAE_OIDC_CLIENT_SECRET_FILE": "/nonexistent/secret"},
            "KUAE_OIDC_CLIENT_SECRET_FILE",
        ),
    ],
)
def test_bad_settings_fail_loudly_at_start(env, message):
    result = _start(env)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and message in result.stderr


def test_manage_commands_work_beside_make_run_with_no_variables(tmp_path):
    """The README's first steps: with nothing set, the embedded default keeps a generated
    key under var/ (the one `make run` uses), so create_user works in the same checkout."""
    env = {"KUAE_VAR_DIR": str(tmp_path)}
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "KUAE_"))}
    clean.pop("DATABASE_URL", None)
    clean.pop("CELERY_BROKER_URL", None)
    run = {"cwd": ROOT, "env": {**clean, **env}, "capture_output": True, "text": True}
    migrate = subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], **run, timeout=300)
    assert migrate.returncode == 0, migrate.stderr
    made = subprocess.run(
        [sys.executable, "manage.py", "create_user", "newcomer", "--role", "agent"],
        **run,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    assert len(made.stdout.strip().splitlines()[-1]) >= 30  # the token, last line
    assert (tmp_path / "secret_key").stat().st_mode & 0o077 == 0


def test_secret_key_from_file(tmp_path):
    secret = tmp_path / "key"
    secret.write_text("f" * 60 + "-from-a-file-0123456789abcdefghijklmnopq\n")
    result = _start(
        {"DJANGO_SECRET_KEY_FILE": str(secret), "DJANGO_ALLOWED_HOSTS": "ops.example.com"}
    )
    assert result.returncode == 0, result.stderr


def test_schema_and_docs_are_not_public(client, api):
    assert api(None).get("/api/v1/schema/").status_code == 401
    docs = client.get("/api/docs/")
    assert docs.status_code == 302 and docs["Location"].startswith("/login/")  # sign in first
    assert api("mia").get("/api/v1/schema/").status_code == 200


def test_admin_lists_fleet_and_jobs(client, users, nodes, job):
    client.force_login(users["root"])
    for path in ("/admin/fleet/node/", "/admin/jobs/job/", "/admin/incidents/incident/"):
        assert client.get(path).status_code == 200


def test_readme_api_example_names_what_make_run_makes():
    """The README's API example is run beside `make run` as written: the interpreter is the
    one `make` installs into, and the cluster is the one the demo simulates."""
    from apps.simulator.management.commands.simulate import Command as Simulate

    text = (ROOT / "README.md").read_text()
    example = text.split("## Using the API", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    venv = next(
        line.split(":=")[1].strip()
        for line in (ROOT / "Makefile").read_text().splitlines()
        if line.startswith("VENV :=")
    )
    assert example.startswith(f"TOKEN=$({venv}/bin/python manage.py create_user ")
    demo_cluster = Simulate().create_parser("manage.py", "simulate").get_default("cluster")
    assert f"--cluster {demo_cluster} " in example
    assert "http://127.0.0.1:8000/api/v1/jobs/1/metrics/" in example  # make run's PORT
