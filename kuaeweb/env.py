"""The one reader of the environment: typed getters that fail loudly on bad values."""

from __future__ import annotations

import ipaddress
import os
import secrets
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    """Return the variable's value, or `default` when unset."""
    return os.environ.get(name, default)


def env_secret(name: str, default: str = "") -> str:
    """Return `NAME`, or the content of the file named by `NAME_FILE` (Docker/K8s secrets)."""
    path = os.environ.get(f"{name}_FILE")
    if path:
        try:
            return Path(path).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE={path!r} cannot be read: {exc}") from exc
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    """Parse a boolean; anything but a clear yes/no is a configuration error."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false)")


def env_int(name: str, default: int, *, minimum: int = 0) -> int:
    """Parse an integer no smaller than `minimum`."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from exc
    if value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    """Parse a comma-separated list, ignoring blanks."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_networks(name: str) -> list[str]:
    """Parse a comma-separated list of networks (CIDRs such as `10.0.0.0/8`, or addresses)."""
    out = []
    for item in env_list(name, []):
        try:
            out.append(str(ipaddress.ip_network(item, strict=False)))
        except ValueError as exc:
            raise ImproperlyConfigured(f"{name}: {item!r} is not a network (10.0.0.0/8)") from exc
    return out


def local_secret(path: Path) -> str:
    """A random secret kept in `path` (mode 600), made on first use: every process that
    shares the folder shares it, and no two folders (or checkouts) have the same one."""
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    made = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(made, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_urlsafe(50))
    try:
        os.link(made, path)  # atomic: the first process to get here wins
    except FileExistsError:
        pass
    finally:
        made.unlink()
    return path.read_text().strip()
