"""Errors the review services raise; the API and the views turn them into answers."""

from __future__ import annotations

from evalsite.errors import Conflict, FieldErrors


class ReviewValidationError(FieldErrors):
    """Invalid input: ``errors`` maps each field to a message (API: 422 naming the field)."""


class ReviewConflict(Conflict):
    """The request is valid but the run's state does not allow it (API: 409)."""
