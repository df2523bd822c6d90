"""The application's errors: what services raise, and the API and pages turn into answers.

Dependency-free on purpose: this module imports nothing (not Django, not an app), so every
app may import it (teams, rubrics, runs, judging and reviews alike) without breaking the one
direction of dependencies: an app's models, services and selectors import only from apps to its
left (teams <- rubrics <- runs <- judging <- reviews) and from evalsite's generic
infrastructure, this module included (views, API routers and tasks may import anything). The judge engine
(judge_engine) imports nothing from Django, the apps or evalsite; its own errors are in
judge_engine/errors.py. tests/test_layers.py checks both.

Each error carries what an answer needs:

- ``message`` (``str(exc)``): a sentence a person can act on;
- ``status``: the HTTP status the API answers with;
- ``extra``: details for programs (ids, limits), answered as ``{"message", "extra"}``;
- ``FieldErrors.errors``: field → message, answered as ninja's 422
  ``{"detail": [{"type", "loc", "msg"}]}`` with ``loc`` = [location, ..., field path], so
  clients read one kind of 422 whether a schema or a service refused the field.

The API translates them in two handlers (``evalsite.api``); pages show ``page_message(exc)``.
Apps subclass these (``RubricValidationError(FieldErrors)``, ``RunConflict(Conflict)``, …)
and keep their own names and attributes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class AppError(Exception):
    """A request the application refuses, answered ``{"message", "extra"}`` with ``status``."""

    status: int = 400

    def __init__(self, message: str = "", *, extra: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.extra: dict[str, Any] = dict(extra or {})

    @property
    def message(self) -> str:
        return str(self)

    def headers(self) -> dict[str, str]:
        """HTTP headers the answer carries besides the body (none by default)."""
        return {}


class FieldErrors(AppError, ValueError):
    """Invalid input: ``errors`` maps each field (``criteria[2].description`` for nested ones)
    to a message naming what to change. ``location`` is where the fields are: ``body`` or
    ``query``. The message defaults to ``"field: message; ..."``."""

    status = 422
    location = "body"

    def __init__(
        self, errors: dict[str, str], message: str | None = None, *, location: str | None = None
    ) -> None:
        text = "; ".join(f"{k}: {v}" for k, v in errors.items()) if message is None else message
        super().__init__(text)
        self.errors = errors
        if location is not None:
            self.location = location


class Conflict(AppError):
    """Valid, but the state of what it names does not allow it (409)."""

    status = 409


class TooLarge(AppError):
    """The input is larger than a configured limit (413); ``extra["limit"]`` says which."""

    status = 413


class TooManyRequests(AppError):
    """A cap on the caller's use is reached (429): ``retry_after`` whole seconds, answered as
    the ``Retry-After`` header and in ``extra`` with the ``limit`` that was reached."""

    status = 429
    retry_after: int = 1

    def __init__(self, message: str, *, limit: Any, retry_after: int | None = None) -> None:
        if retry_after is not None:
            self.retry_after = retry_after
        self.limit = limit
        super().__init__(message, extra={"retry_after": self.retry_after, "limit": limit})

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


def page_message(exc: AppError) -> str:
    """What an HTML page says about an error it cannot show next to a form field: the field
    messages joined with "; " for field errors, else the error's message."""
    if isinstance(exc, FieldErrors):
        return "; ".join(exc.errors.values())
    return exc.message
