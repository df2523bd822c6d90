"""Unsaved input of the New rubric page: the form (name, description, pasted criteria, judge
view and token budget) autosaved as the user types, the way the editor keeps its unsaved edits
(rubrics.working_copy, the same ``WorkingCopy`` rows and compare-and-set revisions), before the
rubric exists: one copy per (team, user), without a rubric. Creating the rubric or discarding
the input deletes it. Form state only: held to the form's limits and shape, never validated as
a rubric (creating does that)."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone
from pydantic import BaseModel, ConfigDict

from teams.models import Team

from .models import DEFAULT_RUN_TOKEN_BUDGET, JudgeView, Rubric, WorkingCopy
from .working_copy import (
    MAX_BUDGET_CHARS,
    WorkingCopyConflict,
    state_validate,
    text_limit_errors,
)

# The New rubric form's fields (rubrics.forms.RubricCreateForm, DraftViewForm) and their caps.
LIMITS = {
    "name": Rubric._meta.get_field("name").max_length or 200,
    "description": 20_000,
    "criteria_text": 100_000,
    "judge_view": 32,
    "run_token_budget": MAX_BUDGET_CHARS,
}


class NewRubricState(BaseModel):
    """The New rubric form as it was: what a rubric-less ``WorkingCopy.state`` holds."""

    model_config = ConfigDict(extra="forbid")

    name: str = ""
    description: str = ""
    criteria_text: str = ""
    judge_view: str = JudgeView.FINAL.value
    run_token_budget: str = str(DEFAULT_RUN_TOKEN_BUDGET)

    def has_input(self) -> bool:
        """Whether anything was typed or chosen that the blank form does not show."""
        blank = NewRubricState()
        return any(str(getattr(self, name)).strip() != getattr(blank, name) for name in LIMITS)


def new_rubric_copy_validate(state: dict[str, Any]) -> NewRubricState:
    """``state`` held to the form's caps and shape; RubricValidationError names the field."""
    return state_validate(NewRubricState, state, text_limit_errors(state, LIMITS))


def _copies(team: Team, user: Any) -> Any:
    return WorkingCopy.objects.filter(team=team, user=user, rubric__isnull=True)


def new_rubric_copy_get(*, team: Team, user: Any) -> WorkingCopy | None:
    """``user``'s own unsaved New rubric input in ``team`` (nobody else's, no other team's)."""
    return _copies(team, user).first()


def new_rubric_copy_discard(*, team: Team, user: Any) -> bool:
    deleted, _ = _copies(team, user).delete()
    return deleted > 0


def new_rubric_copy_save(
    *, team: Team, user: Any, state: dict[str, Any], based_on: uuid.UUID | None
) -> WorkingCopy | None:
    """Store the New rubric form as posted; the blank form is no input (the copy is deleted,
    None returned). Compare-and-set as the editor's autosave: a page rendered from another
    revision than the stored copy's raises WorkingCopyConflict and changes nothing."""
    parsed = new_rubric_copy_validate(state)
    with transaction.atomic():
        copy = _copies(team, user).select_for_update().first()
        if copy is not None and copy.revision != based_on:
            when = f"{timezone.localtime(copy.updated_at):%H:%M}"
            raise WorkingCopyConflict(
                f"Not saved: newer input for a new rubric was saved at {when}, in another tab "
                "or after this page was opened. Reload the page to continue from it."
            )
        if copy is None and based_on is not None:
            raise WorkingCopyConflict(
                "Not saved: the input this page shows was used to create a rubric or discarded "
                "since it was opened. Reload the page to start again."
            )
        if not parsed.has_input():
            _copies(team, user).delete()
            return None
        if copy is None:
            copy = WorkingCopy(team=team, user=user)
        copy.state, copy.revision = parsed.model_dump(), uuid.uuid4()
        try:
            with transaction.atomic():
                copy.save()
        except IntegrityError as exc:  # another request created the copy meanwhile
            raise WorkingCopyConflict(
                "Not saved: other input was saved at the same moment. Reload the page to "
                "continue from it."
            ) from exc
    return copy
