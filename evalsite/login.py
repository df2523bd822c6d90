"""Sign-in throttling: a cache-based lock-out in the spirit of django-axes, without the dependency.

Every sign-in attempt first takes one token from two buckets: one per username (compared
without case) and one per client address. A bucket holds ``EVALSITE_LOGIN_MAX_ATTEMPTS`` (per
address: ``EVALSITE_LOGIN_MAX_ATTEMPTS_PER_IP``) and refills at that many per
``EVALSITE_LOGIN_WINDOW`` seconds. A successful sign-in gives its own tokens back, so only
failures count; an empty bucket refuses the attempt before the password is even checked — the
right password too — with a message saying when to try again (HTTP 429 on the sign-in page).

The buckets live in the store the judge rate limits use (evalsite/ratelimit.py: Redis when the
broker is Redis, else a SQLite file under DATA_DIR), so every web process shares them. The
client address is REMOTE_ADDR: X-Forwarded-For is never read, since a client can forge it.
"""

from __future__ import annotations

import hashlib
import logging
import math
from dataclasses import dataclass
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponse

from evalsite.ratelimit import Draw, backend

THROTTLED = "throttled"
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Refusal:
    """Why an attempt was refused and for how many seconds."""

    scope: str  # "account" or "address"
    wait: float

    @property
    def message(self) -> str:
        whom = "for this account" if self.scope == "account" else "from your network address"
        return f"Too many sign-in attempts {whom}. Try again in {_duration(self.wait)}."


def _duration(seconds: float) -> str:
    if seconds < 60:
        n = max(1, math.ceil(seconds))
        return f"{n} second{'s' if n != 1 else ''}"
    n = math.ceil(seconds / 60)
    return f"{n} minute{'s' if n != 1 else ''}"


def _draw(scope: str, value: str, limit: int, cost: float) -> Draw:
    # Hashed, so the store holds no usernames or addresses.
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    window = float(settings.EVALSITE_LOGIN_WINDOW)
    return Draw(
        key=f"evalsite:login:{scope}:{digest}",
        capacity=float(limit),
        rate=limit / window,
        cost=cost,
    )


def _draws(username: str, address: str, cost: float) -> list[tuple[str, Draw]]:
    """The address's and the username's bucket; a limit of 0 switches that one off."""
    wanted = [
        ("address", address, settings.EVALSITE_LOGIN_MAX_ATTEMPTS_PER_IP),
        ("account", username.strip().lower(), settings.EVALSITE_LOGIN_MAX_ATTEMPTS),
    ]
    return [
        (scope, _draw(scope, value, limit, cost)) for scope, value, limit in wanted if limit > 0
    ]


def login_attempt_begin(*, username: str, address: str) -> Refusal | None:
    """Take one attempt from the address's and the username's allowance; a Refusal (nothing
    taken) when either is used up. Call ``login_attempt_succeeded`` after a good password.

    A store that cannot be reached lets the attempt through (logged), as the API's request
    limit does: the lock-out protects sign-in, it must not take it down."""
    try:
        return _begin(username, address)
    except Exception:  # noqa: BLE001 - fail open, loudly
        logger.exception("sign-in limiter unavailable; not counting this attempt")
        return None


def _begin(username: str, address: str) -> Refusal | None:
    store = backend()
    taken: list[Draw] = []
    for scope, draw in _draws(username, address, 1.0):
        wait = store.take([draw])
        if wait > 0:
            if taken:
                store.take([_refund(d) for d in taken])
            return Refusal(scope=scope, wait=wait)
        taken.append(draw)
    return None


def login_attempt_succeeded(*, username: str, address: str) -> None:
    """Give the attempt back: a good sign-in uses up nothing (nor clears earlier failures)."""
    draws = [draw for _, draw in _draws(username, address, -1.0)]
    if not draws:
        return
    try:
        backend().take(draws)
    except Exception:  # noqa: BLE001 - the sign-in itself succeeded
        logger.exception("sign-in limiter unavailable; attempt not given back")


def api_key_attempt(*, address: str) -> Refusal | None:
    """Count one API request whose key is unknown (or revoked, or malformed) against its
    address: the per-address sign-in allowance (EVALSITE_LOGIN_MAX_ATTEMPTS_PER_IP per
    EVALSITE_LOGIN_WINDOW), in a bucket of its own, so a client stuck on a revoked key does
    not lock the people behind the same address out of signing in. A Refusal once used up;
    fails open like sign-in."""
    limit = settings.EVALSITE_LOGIN_MAX_ATTEMPTS_PER_IP
    if limit <= 0:
        return None
    try:
        wait = backend().take([_draw("apikey", address, limit, 1.0)])
    except Exception:  # noqa: BLE001 - fail open, loudly
        logger.exception("API key limiter unavailable; not counting this attempt")
        return None
    return Refusal(scope="address", wait=wait) if wait > 0 else None


def _refund(draw: Draw) -> Draw:
    return Draw(key=draw.key, capacity=draw.capacity, rate=draw.rate, cost=-draw.cost)


def client_address(request: HttpRequest | None) -> str:
    return (request.META.get("REMOTE_ADDR") or "unknown") if request is not None else "unknown"


class ThrottledAuthenticationMixin:
    """For AuthenticationForm subclasses: refuse the attempt while its username or address is
    locked out (error code ``throttled``, ``refusal`` set) without checking the password."""

    request: HttpRequest | None
    cleaned_data: dict[str, Any]
    refusal: Refusal | None = None

    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username")
        if not username or not self.cleaned_data.get("password"):
            return super().clean()  # type: ignore[misc]
        address = client_address(self.request)
        self.refusal = login_attempt_begin(username=username, address=address)
        if self.refusal is not None:
            raise forms.ValidationError(self.refusal.message, code=THROTTLED)
        cleaned = super().clean()  # type: ignore[misc]
        login_attempt_succeeded(username=username, address=address)
        return cleaned


class ThrottledAuthenticationForm(ThrottledAuthenticationMixin, AuthenticationForm):
    pass


class ThrottledAdminAuthenticationForm(ThrottledAuthenticationMixin, AdminAuthenticationForm):
    pass


def _locked_out(response: HttpResponse, form: Any) -> HttpResponse:
    """A sign-in page refused for a lock-out answers 429 with Retry-After."""
    refusal = getattr(form, "refusal", None)
    if refusal is not None:
        response.status_code = 429
        response["Retry-After"] = str(max(1, math.ceil(refusal.wait)))
    return response


class LoginView(auth_views.LoginView):
    """The site's sign-in page: a locked-out attempt answers 429 with Retry-After."""

    authentication_form = ThrottledAuthenticationForm

    def form_invalid(self, form: Any) -> HttpResponse:
        return _locked_out(super().form_invalid(form), form)


def admin_login(request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
    """The admin's sign-in (its own view, with ThrottledAdminAuthenticationForm as
    ``admin.site.login_form``), answering 429 with Retry-After when locked out, as the site's."""
    response = admin.site.login(request, extra_context)
    context = getattr(response, "context_data", None) or {}
    return _locked_out(response, context.get("form"))
