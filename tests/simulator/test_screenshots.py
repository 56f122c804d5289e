"""`manage.py screenshots` (docs/simulator.md, Screenshots): its pieces — every screenshot is
of a page the app serves, in a window from a phone's to a wall's, into a PNG under docs/ the
README shows; its port is free; its demo runs in a directory of its own. The heavy run (a
demo, a server, Chromium) is not part of the suite."""

from __future__ import annotations

import io
import socket
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management import call_command
from django.urls import resolve

from apps.simulator.management.commands import screenshots
from apps.simulator.management.commands.screenshots import SHOTS, demo_env, free_port


def test_every_shot_is_a_served_page_into_a_png_the_readme_shows() -> None:
    root = Path(settings.BASE_DIR)
    readme = (root / "README.md").read_text()
    assert len({s.name for s in SHOTS}) == len(SHOTS) and len({s.out for s in SHOTS}) == len(SHOTS)
    assert "docs/overview.png" in {s.out for s in SHOTS}
    for shot in SHOTS:
        resolve(urlsplit(shot.path).path)  # a page the app serves (Resolver404 if not)
        assert 360 <= shot.width <= 2560 and shot.height > 0, shot
        assert shot.out.startswith("docs/") and shot.out.endswith(".png"), shot
        assert shot.out in readme, f"README shows {shot.out}"
        assert (root / shot.out).exists(), shot.out  # made and committed


def test_its_port_is_free_and_its_demo_runs_apart(tmp_path) -> None:  # noqa: ANN001
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))  # nobody holds it
    env = demo_env(tmp_path, port)
    assert env["KUAE_VAR_DIR"] == str(tmp_path) and env["PORT"] == str(port)
    assert env["KUAE_DEMO"] == "1" and "DATABASE_URL" not in env
    assert "DJANGO_SETTINGS_MODULE" not in env  # the demo's settings, not the tests'
    assert Path(env["PATH"].split(":")[0], "honcho").exists()  # the Procfile's runner


def test_list_names_each_shot() -> None:
    out = io.StringIO()
    call_command("screenshots", list=True, stdout=out)
    assert out.getvalue().splitlines() == [
        f"{s.name}: {s.path} at {s.width}×{s.height} → {s.out}" for s in screenshots.SHOTS
    ]
