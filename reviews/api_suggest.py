"""Suggested criterion edits over the API: /api/rubrics/{rubric}/suggestions.

Asking answers 202 with the pending suggestions (a worker asks the judge); reading lists them
with their status; accepting answers the draft version and the comparison that judges it next
to the current version on the labelled runs (its report at ``comparison_url``).
"""

from __future__ import annotations

from typing import Any, Literal
from uuid import UUID

from django.http import Http404, HttpRequest
from django.urls import reverse
from ninja import Field, Query, Router, Schema, Status
from pydantic import ConfigDict

from evalsite.schemas import with_errors
from rubrics.selectors import rubric_get
from teams.api import caller, editor

from .models import Suggestion
from .selectors.suggestions import MAX_LISTED, min_labels_for, suggestion_get, suggestions_list
from .services.suggestion_decide import (
    suggestion_accept,
    suggestion_dismiss,
    suggestion_threshold_set,
)
from .services.suggestions import suggestions_request

router = Router(tags=["suggestions"])

Status_ = Literal["pending", "ready", "failed", "accepted", "dismissed"]


class SuggestIn(Schema):
    model_config = ConfigDict(extra="forbid")
    criterion_id: str | None = Field(
        None, max_length=32, description="Only this criterion (default: every one with enough)"
    )


class ThresholdIn(Schema):
    model_config = ConfigDict(extra="forbid")
    min_labels: int | None = Field(
        None, ge=1, le=10_000, description="Disagreeing labels needed (null: the default)"
    )


class SuggestionOut(Schema):
    id: UUID
    criterion_id: str
    criterion: str = Field(description="The criterion's wording the edit rests on")
    version: int = Field(description="The rubric version whose criterion it edits")
    kind: str = Field(description="reword | split | instruction ('' while pending or failed)")
    text: str
    rationale: str
    evidence: list[str] = Field(description="The run ids of the disagreeing labels shown")
    status: str = Field(description="pending | ready | failed | accepted | dismissed")
    error: str = Field(description="Why it failed ('' otherwise)")
    judge_model: str
    tokens: int | None
    cost: float | None
    draft_version: int | None = Field(description="Accepted: the draft version it made")
    comparison_id: UUID | None
    created_at: Any
    finished_at: Any


class SuggestionsOut(Schema):
    min_labels: int
    items: list[SuggestionOut]


class ListQuery(Schema):
    status: Status_ | None = None
    limit: int = Field(50, ge=1, le=MAX_LISTED)


def _rubric(request: HttpRequest, ref: str) -> Any:
    found = rubric_get(team=caller(request).team, ref=ref, with_criteria=False)
    if found is None:
        raise Http404("No such rubric")
    return found


def _suggestion(rubric: Any, suggestion_id: UUID) -> Suggestion:
    found = suggestion_get(rubric=rubric, suggestion_id=suggestion_id)
    if found is None:
        raise Http404("No such suggestion")
    return found


def suggestion_json(s: Suggestion) -> dict[str, Any]:
    tokens = None
    if s.prompt_tokens is not None or s.completion_tokens is not None:
        tokens = (s.prompt_tokens or 0) + (s.completion_tokens or 0)
    return {
        "id": s.pk, "criterion_id": s.criterion_key, "criterion": s.criterion_text,
        "version": s.version.number, "kind": s.kind, "text": s.text, "rationale": s.rationale,
        "evidence": [str(r) for r in s.evidence], "status": s.status, "error": s.error,
        "judge_model": s.judge_model, "tokens": tokens, "cost": s.cost,
        "draft_version": s.draft.number if s.draft is not None else None,
        "comparison_id": s.comparison_id, "created_at": s.created_at,
        "finished_at": s.finished_at,
    }  # fmt: skip


@router.post(
    "/rubrics/{rubric_ref}/suggestions",
    response=with_errors({202: SuggestionsOut}, 403, 404, 409),
    operation_id="rubric_suggestions_create",
)
def suggestions_create(request: HttpRequest, rubric_ref: str, payload: SuggestIn | None = None):
    """Ask the judge model for an edit of each criterion with enough labels that disagree with
    it (or of `criterion_id` alone). 202 with the pending suggestions; too few labels is a 422
    naming `criterion_id`; a reached judge budget a 409."""
    who = editor(request)
    rubric = _rubric(request, rubric_ref)
    criterion_id = payload.criterion_id if payload is not None else None
    made = suggestions_request(
        team=who.team, rubric=rubric, criterion_id=criterion_id, user=who.user
    )
    items = [suggestion_json(s) for s in made]
    return Status(202, {"min_labels": min_labels_for(rubric=rubric), "items": items})


@router.get(
    "/rubrics/{rubric_ref}/suggestions",
    response=with_errors({200: SuggestionsOut}, 404),
    operation_id="rubric_suggestions_list",
)
def suggestions_read(request: HttpRequest, rubric_ref: str, q: Query[ListQuery]):
    """The rubric's suggested edits, newest first (at most `limit`)."""
    rubric = _rubric(request, rubric_ref)
    statuses = [q.status] if q.status else []
    found = suggestions_list(rubric=rubric, statuses=statuses, limit=q.limit)
    items = [suggestion_json(s) for s in found]
    return {"min_labels": min_labels_for(rubric=rubric), "items": items}


@router.post(
    "/rubrics/{rubric_ref}/suggestions/{suggestion_id}/accept",
    response=with_errors({200: dict[str, Any]}, 403, 404, 409),
    operation_id="rubric_suggestion_accept",
)
def suggestion_accept_op(request: HttpRequest, rubric_ref: str, suggestion_id: UUID):
    """Put the edit into a draft version and compare it with the current version on the
    labelled runs: the answer names both; publish the draft through the publishing gate."""
    who = editor(request)
    rubric = _rubric(request, rubric_ref)
    suggestion = suggestion_accept(
        team=who.team, rubric=rubric, suggestion=_suggestion(rubric, suggestion_id), user=who.user
    )
    comparison_id = suggestion.comparison_id
    return {
        "suggestion": suggestion_json(suggestion),
        "draft_version": suggestion.draft.number if suggestion.draft else None,
        "comparison_id": str(comparison_id) if comparison_id else None,
        "comparison_url": reverse("reviews:comparison", args=[comparison_id])
        if comparison_id
        else None,
    }


@router.post(
    "/rubrics/{rubric_ref}/suggestions/{suggestion_id}/dismiss",
    response=with_errors({200: SuggestionOut}, 403, 404, 409),
    operation_id="rubric_suggestion_dismiss",
)
def suggestion_dismiss_op(request: HttpRequest, rubric_ref: str, suggestion_id: UUID):
    """Set a ready or failed suggestion aside."""
    who = editor(request)
    rubric = _rubric(request, rubric_ref)
    suggestion = suggestion_dismiss(suggestion=_suggestion(rubric, suggestion_id), user=who.user)
    return suggestion_json(suggestion)


@router.put(
    "/rubrics/{rubric_ref}/suggestions/threshold",
    response=with_errors({200: dict[str, Any]}, 403, 404),
    operation_id="rubric_suggestion_threshold_set",
)
def suggestion_threshold(request: HttpRequest, rubric_ref: str, payload: ThresholdIn):
    """The rubric's own minimum of disagreeing labels per criterion (null: the default,
    EVALSITE_SUGGEST_MIN_LABELS)."""
    editor(request)
    rubric = _rubric(request, rubric_ref)
    return {"min_labels": suggestion_threshold_set(rubric=rubric, min_labels=payload.min_labels)}
