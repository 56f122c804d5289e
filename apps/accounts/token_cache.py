"""API tokens remembered for a few seconds, for the intakes that take bursts
(docs/api.md, Conventions: a stall report from every rank of a job within a minute).

A token's user, with its scope (read with it: apps/accounts/scoping.py), is kept per
process for `TTL_S` seconds after the query that found it live, keyed by the token's hash
(the raw token is never kept). So a burst of reports costs one token query per token and
process every few seconds, not one per report. A token revoked, a password changed, an
account deactivated or its role or scope changed:

- in this process, forgets every remembered token at once (`forget_all`, called on the
  saves and deletes of the models that decide it, and by `token_revoke`);
- in another process, is seen within `TTL_S` seconds.

A token past its lifetime (KUAE_TOKEN_TTL_DAYS) is refused as it would be uncached.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db.models.signals import post_delete, post_save
from django.utils import timezone

TTL_S = 5.0
MAX_TOKENS = 4_096  # a token per node of a 1,000-node job and then some; oldest go first

Found = tuple[Any, Any]  # (user, token), as `user_for_token` answers
_lock = threading.Lock()
_kept: dict[str, tuple[float, Found]] = {}  # token hash → (monotonic expiry, answer)


def cached(
    key_hash: str, load: Callable[[], Found], *, clock: Callable[[], float] = time.monotonic
) -> Found:
    """The (user, token) of the token whose hash is `key_hash`: remembered when found live
    less than `TTL_S` seconds ago (and still within its lifetime), else `load()`, which
    raises for a token that is not live and is then remembered."""
    now = clock()
    with _lock:
        hit = _kept.get(key_hash)
    if hit is not None and hit[0] > now and _within_lifetime(hit[1][1]):
        return hit[1]
    found = load()
    with _lock:
        _kept.pop(key_hash, None)
        while len(_kept) >= MAX_TOKENS:
            _kept.pop(next(iter(_kept)))
        _kept[key_hash] = (now + TTL_S, found)
    return found


def _within_lifetime(token: Any) -> bool:
    age = timezone.now() - token.created_at
    return age < dt.timedelta(days=settings.KUAE_TOKEN_TTL_DAYS)


def forget_all(**_: Any) -> None:
    """Forget every remembered token (a signal receiver too: any arguments are ignored)."""
    with _lock:
        _kept.clear()


def forget_on(*models: type) -> None:
    """Forget every remembered token whenever a row of `models` is saved or deleted: the
    models that decide whether a token is live and what it may do."""
    for model in models:
        post_save.connect(forget_all, sender=model, dispatch_uid=f"token_cache_save_{model}")
        post_delete.connect(forget_all, sender=model, dispatch_uid=f"token_cache_del_{model}")
