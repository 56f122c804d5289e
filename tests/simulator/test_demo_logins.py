"""The demo signs in as an operator; the other roles' logins are on its sign-in page only."""

from __future__ import annotations

from django.core.management import call_command

from apps.accounts.models import User


def test_demo_logins_operator_first_and_listed_on_the_demo_sign_in(client, db, settings) -> None:  # noqa: ANN001
    settings.DEMO = True
    call_command("demo_setup", gpus=16, days=1)
    roles = dict(User.objects.filter(username__startswith="demo").values_list("username", "role"))
    assert roles == {
        "demo": "operator",
        "demo-manager": "manager",
        "demo-engineer": "engineer",
        "demo-admin": "admin",
    }
    page = client.get("/login/").content.decode()
    assert "demo-manager" in page and "demo-engineer" in page and "demo-admin" in page
    assert client.login(username="demo", password="demo")


def test_no_demo_logins_outside_the_demo(client, db, settings) -> None:  # noqa: ANN001
    settings.DEMO = False
    assert "demo-manager" not in client.get("/login/").content.decode()
