"""Errors the review services raise; the API and the views turn them into answers."""

from __future__ import annotations


class ReviewValidationError(ValueError):
    """Invalid input: ``errors`` maps each field to a message (API: 422 naming the field)."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


class ReviewConflict(Exception):
    """The request is valid but the run's state does not allow it (API: 409)."""
