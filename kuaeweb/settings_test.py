"""Settings for the test suite: the real settings, with test-only defaults."""

from __future__ import annotations

import os

os.environ.setdefault("KUAE_TESTING", "1")
os.environ.setdefault("DJANGO_HTTPS", "0")

from kuaeweb.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
