"""A signed-in browser's session ends after KUAE_SESSION_IDLE_MINUTES without a request."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth import SESSION_KEY
from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse

SEEN = "_kuae_seen"  # when this session last made a request (epoch seconds)
TOUCH_EVERY_S = 60  # write the session at most once a minute for it


@receiver(user_logged_in)
def _signed_in(sender: Any, request: HttpRequest | None, **kwargs: Any) -> None:
    """A session starts in use (written with the sign-in, not by the next request)."""
    if request is not None and hasattr(request, "session"):
        request.session[SEEN] = int(time.time())


class SessionIdleTimeoutMiddleware:
    """Sign a session out when it has been idle too long; otherwise note that it is in use
    (a signed-in session is written at most once a minute for it; sessions without a user,
    and API calls with tokens, never). Wall-clock time, so it holds whatever the clock the
    application reads says. The cookie and the stored session outlive it (SESSION_COOKIE_AGE
    from the last write) only as a backstop."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        session = request.session
        if SESSION_KEY in session:
            now = time.time()
            seen = session.get(SEEN)
            if isinstance(seen, int | float) and now - seen > settings.KUAE_SESSION_IDLE_S:
                session.flush()  # signed out; the view sees an anonymous visitor
            elif not isinstance(seen, int | float) or now - seen >= TOUCH_EVERY_S:
                session[SEEN] = int(now)
        return self.get_response(request)
