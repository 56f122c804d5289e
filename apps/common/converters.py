"""URL path converters. `<hostname:hostname>`: a node's hostname in a path, in lower case
(hostnames compare without regard to case, apps.common.hostnames), so that
`nodes/R007N01/heartbeat/` is `r007n01`'s — the scope check and the lookup see the name as
it is kept. Registered when this module is imported (each urls module that uses it does)."""

from __future__ import annotations

from django.urls import register_converter
from django.urls.converters import StringConverter

from apps.common.hostnames import hostname_key


class HostnameConverter(StringConverter):
    """Any path segment (as `str`), given to the view in lower case."""

    def to_python(self, value: str) -> str:
        return hostname_key(value)


register_converter(HostnameConverter, "hostname")
