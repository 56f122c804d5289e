"""A JSON parser that accepts NaN/Infinity, as Python's `json` writes them (CONTRACT §2)."""

from rest_framework.parsers import JSONParser


class LenientJSONParser(JSONParser):
    """JSON with the non-standard tokens NaN, Infinity, -Infinity allowed."""

    strict = False
