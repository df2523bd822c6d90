"""Suggested criterion edits: ask the judge model for an edit of a criterion reviewers keep
disagreeing with, follow it, accept it into a draft version and a comparison, or dismiss it."""

from __future__ import annotations

from typing import Any

from ._base import BaseClient, body

ENDED = ("ready", "failed", "accepted", "dismissed")


class SuggestMixin(BaseClient):
    def suggest_edits(self, rubric: str, *, criterion_id: str | None = None) -> dict[str, Any]:
        """Ask for an edit of ``criterion_id`` (default: every criterion with enough labels
        that disagree with the judge): ``{"min_labels", "items"}``, pending (202)."""
        answer: dict[str, Any] = self._json(
            "rubric_suggestions_create",
            {"rubric_ref": rubric},
            json=body(criterion_id=criterion_id),
        )
        return answer

    def list_suggestions(
        self, rubric: str, *, status: str | None = None, limit: int = 50
    ) -> dict[str, Any]:
        """The rubric's suggested edits, newest first (``status`` filters)."""
        params = body(status=status, limit=limit)
        answer: dict[str, Any] = self._json(
            "rubric_suggestions_list", {"rubric_ref": rubric}, params=params
        )
        return answer

    def wait_suggestion(
        self, rubric: str, suggestion_id: str, *, poll: float = 1.0, timeout: float | None = None
    ) -> dict[str, Any]:
        """The suggestion once the judge answered (``ready``) or it ``failed``."""

        def fetch() -> dict[str, Any]:
            items = self.list_suggestions(rubric, limit=200)["items"]
            return next(s for s in items if s["id"] == suggestion_id)

        return self._wait(
            fetch,
            lambda s: s["status"] in ENDED,
            poll=poll,
            timeout=timeout,
            what=f"suggestion {suggestion_id}",
        )

    def accept_suggestion(self, rubric: str, suggestion_id: str) -> dict[str, Any]:
        """Put a ready edit into a draft version and compare it with the current version on
        the labelled runs: ``{"suggestion", "draft_version", "comparison_id",
        "comparison_url"}``; follow the comparison with ``wait_comparison``."""
        path = {"rubric_ref": rubric, "suggestion_id": suggestion_id}
        answer: dict[str, Any] = self._json("rubric_suggestion_accept", path)
        return answer

    def dismiss_suggestion(self, rubric: str, suggestion_id: str) -> dict[str, Any]:
        """Set a ready or failed suggestion aside."""
        path = {"rubric_ref": rubric, "suggestion_id": suggestion_id}
        answer: dict[str, Any] = self._json("rubric_suggestion_dismiss", path)
        return answer

    def set_suggestion_threshold(self, rubric: str, min_labels: int | None) -> dict[str, Any]:
        """The rubric's own minimum of disagreeing labels per criterion (None: the default)."""
        answer: dict[str, Any] = self._json(
            "rubric_suggestion_threshold_set",
            {"rubric_ref": rubric},
            json={"min_labels": min_labels},
        )
        return answer
