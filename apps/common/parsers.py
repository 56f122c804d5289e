"""Body parsers: JSON with NaN/Infinity (docs/integrations.md, 3. Training jobs), and plain text for
Prometheus.

Every JSON parser refuses a body nested deeper than `JSON_DEPTH` (docs/operations.md, Limits) before
parsing it, so a deep body is a 400 naming the bound, never a RecursionError (a 500).
"""

from __future__ import annotations

import io

import orjson
from rest_framework import parsers
from rest_framework.exceptions import ParseError

from apps.common.jsondepth import too_deep
from apps.common.limits import JSON_DEPTH

TOO_DEEP = f"JSON nested more than {JSON_DEPTH} levels deep (the bound on JSON nesting depth)"


def json_body(stream, encoding: str = "utf-8") -> bytes:  # noqa: ANN001
    """The body's bytes, checked against the nesting bound (ParseError naming it)."""
    body = stream.read()
    try:
        utf8 = body if encoding.lower() in ("utf-8", "utf8") else body.decode(encoding).encode()
    except (UnicodeError, LookupError) as exc:
        raise ParseError(f"body is not {encoding} text: {exc}") from exc
    if too_deep(utf8):
        raise ParseError(TOO_DEEP)
    return body


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser (the API's default), within the nesting bound."""

    def parse(self, stream, media_type=None, parser_context=None):  # noqa: ANN001, ANN201
        encoding = parsers.get_encoding(parser_context or {})
        body = json_body(stream, encoding)
        try:
            return super().parse(io.BytesIO(body), media_type, parser_context)
        except RecursionError as exc:  # not reachable within the bound; never a 500
            raise ParseError(TOO_DEEP) from exc


class LenientJSONParser(JSONParser):
    """JSON with the non-standard tokens NaN, Infinity, -Infinity allowed."""

    strict = False


class PlainTextParser(parsers.BaseParser):
    """`text/plain` bodies (Prometheus exposition format) as a str."""

    media_type = "text/plain"

    def parse(self, stream, media_type=None, parser_context=None):  # noqa: ANN001, ANN201
        charset = (parser_context or {}).get("encoding") or "utf-8"
        try:
            return stream.read().decode(charset)
        except UnicodeDecodeError as exc:
            raise ParseError(f"body is not {charset} text: {exc}") from exc


class FastJSONParser(parsers.BaseParser):
    """Strict JSON parsed by orjson, for the high-volume intake endpoints."""

    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):  # noqa: ANN001, ANN201
        body = json_body(stream)
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise ParseError(f"JSON parse error - {exc}") from exc
