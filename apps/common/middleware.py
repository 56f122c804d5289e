"""Request-body limit: 413 over the configured size, compressed (gzip) or not."""

from __future__ import annotations

import io
import zlib
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse


def _too_large(limit: int) -> JsonResponse:
    return JsonResponse({"detail": f"request body exceeds the limit of {limit} bytes"}, status=413)


class BodyLimitMiddleware:
    """Refuse bodies over KUAE_MAX_BODY_BYTES with 413, and inflate gzip bodies safely.

    Django alone answers 400 for an oversized body; the API answers 413
    (docs/api.md, Conventions). A gzip body is inflated here with the same limit on its
    inflated size, so a small compressed bomb cannot expand past it.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit: int = settings.KUAE_MAX_BODY_BYTES
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        if declared > limit:
            return _too_large(limit)
        encoding = request.META.get("HTTP_CONTENT_ENCODING", "").strip().lower()
        if encoding in ("gzip", "deflate"):
            raw = request.read(limit + 1)
            if len(raw) > limit:
                return _too_large(limit)
            inflater = zlib.decompressobj(wbits=47)  # 32+15: gzip or zlib header
            try:
                body = inflater.decompress(raw, limit + 1)
            except zlib.error:
                return JsonResponse({"detail": "body is not valid gzip/deflate data"}, status=400)
            if len(body) > limit or inflater.unconsumed_tail:
                return _too_large(limit)
            request._body = body  # type: ignore[attr-defined]
            request._stream = io.BytesIO(body)  # type: ignore[attr-defined]
            request.META["CONTENT_LENGTH"] = str(len(body))
            del request.META["HTTP_CONTENT_ENCODING"]
        return self.get_response(request)


class SecurityHeadersMiddleware:
    """Content-Security-Policy (KUAE_CSP) and a strict referrer policy on every response."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if settings.KUAE_CSP:
            response.headers.setdefault("Content-Security-Policy", settings.KUAE_CSP)
        response.headers.setdefault("Referrer-Policy", "same-origin")
        return response


class NulQueryMiddleware:
    """A NUL character in a query parameter → 400 naming it (PostgreSQL text cannot hold
    one, so a filter on it would otherwise fail in the database)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        for key, values in request.GET.lists():
            if "\x00" in key or any("\x00" in v for v in values):
                name = key.replace("\x00", "\\0")
                return JsonResponse({name: ["must not contain a NUL character"]}, status=400)
        return self.get_response(request)
