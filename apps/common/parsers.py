"""Body parsers: JSON with NaN/Infinity (CONTRACT §2), and plain text for Prometheus."""

import orjson
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser, JSONParser


class LenientJSONParser(JSONParser):
    """JSON with the non-standard tokens NaN, Infinity, -Infinity allowed."""

    strict = False


class PlainTextParser(BaseParser):
    """`text/plain` bodies (Prometheus exposition format) as a str."""

    media_type = "text/plain"

    def parse(self, stream, media_type=None, parser_context=None):  # noqa: ANN001, ANN201
        charset = (parser_context or {}).get("encoding") or "utf-8"
        try:
            return stream.read().decode(charset)
        except UnicodeDecodeError as exc:
            raise ParseError(f"body is not {charset} text: {exc}") from exc


class FastJSONParser(BaseParser):
    """Strict JSON parsed by orjson, for the high-volume intake endpoints."""

    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):  # noqa: ANN001, ANN201
        try:
            return orjson.loads(stream.read())
        except orjson.JSONDecodeError as exc:
            raise ParseError(f"JSON parse error - {exc}") from exc
