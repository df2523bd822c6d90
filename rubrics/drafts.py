"""Drafts: rubric versions saved but not published (``RubricVersion.published=False``).

A draft is made like any version (keys kept from the current version, a number of its own), so
comparisons judge it through the ordinary version machinery and verdict reuse; it never becomes
the rubric's current version until ``draft_publish``. Numbers are shared with published
versions: an abandoned draft leaves a gap in the published numbers, and the history shows it as
a draft version. Saving the same draft twice returns the first one, and saving the same edits
as a version (rubrics.versioning.version_if_changed) publishes it under its own number.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from evalsite.errors import Conflict

from .models import Criterion, Rubric, RubricVersion
from .services import (
    RubricValidationError,
    criteria_from_any,
    criteria_validate,
    judge_view_validate,
)
from .settings_rules import instructions_errors
from .versioning import examples_next, matching_draft, version_create, view_of


class NotADraft(Conflict):
    """Publishing a version that is already published."""


def _same(version: RubricVersion, criteria: list[Any], view: dict[str, Any]) -> bool:
    rows = [
        (c.description, c.required)
        for c in Criterion.objects.filter(version=version).order_by("position")
    ]
    wanted = [(c.description.strip(), c.required) for c in criteria]
    return rows == wanted and view_of(version) == view


def draft_create(
    *,
    rubric: Rubric,
    criteria: Any,
    judge_view: str | None = None,
    run_token_budget: int | None = None,
    instructions: str | None = None,
    note: str = "",
    user: Any = None,
) -> tuple[RubricVersion, bool]:
    """An unpublished version with these criteria (text or a list), judge view and
    instructions (None: the current version's); its examples are the rubric's next ones
    (rubrics.versioning.examples_next). Returns (draft, created): the same criteria, view and
    examples as an existing draft newer than the current version (``matching_draft``) return
    that draft. Errors name the field."""
    parsed = criteria_from_any(criteria)
    if not parsed:
        raise RubricValidationError({"criteria": "a draft version needs at least one criterion"})
    criteria_validate(parsed)
    if errors := instructions_errors(instructions):  # the limit versions have, named
        raise RubricValidationError(errors)
    with transaction.atomic():
        locked = Rubric.objects.select_for_update().get(pk=rubric.pk)
        current = locked.current_version
        # What the judge sees and the instructions (rubrics.versioning.view_of): the current
        # version's unless given.
        view = view_of(current)
        given = {
            "judge_view": judge_view,
            "run_token_budget": run_token_budget,
            "instructions": instructions,
        }
        view |= {k: v for k, v in given.items() if v is not None and k in view}
        judge_view_validate(
            judge_view=view["judge_view"], run_token_budget=view["run_token_budget"]
        )
        unchanged = current is not None and _same(current, parsed, view)
        if unchanged and not getattr(locked, "examples_draft", False):
            raise RubricValidationError(
                {"criteria": "no changes: these are the current version's criteria and view"}
            )
        found = matching_draft(locked, parsed, view, examples_next(locked))
        if found is not None:
            return found, False
        version = version_create(rubric=locked, criteria=parsed, user=user, note=note, **view)
        # version_create makes the new version current: a draft is not.
        version.published = False
        version.save(update_fields=["published"])
        locked.current_version = current
        locked.save(update_fields=["current_version", "updated_at"])
    rubric.current_version = current
    return version, True


def draft_get(*, rubric: Rubric, number: int) -> RubricVersion | None:
    return RubricVersion.objects.filter(rubric=rubric, number=number).first()


def draft_publish(*, rubric: Rubric, version: RubricVersion, gate_note: str = "") -> RubricVersion:
    """Make the draft the rubric's current version (compare-and-set on ``published``: a draft
    is published once). ``gate_note`` records how it passed the gate, for the history."""
    if version.rubric_id != rubric.pk:
        raise RubricValidationError({"version": "not a version of this rubric"})
    with transaction.atomic():
        locked = Rubric.objects.select_for_update().get(pk=rubric.pk)
        changed = RubricVersion.objects.filter(pk=version.pk, published=False).update(
            published=True, gate_note=gate_note[:600]
        )
        if not changed:
            raise NotADraft(f"version {version.number} is already published")
        locked.current_version = version
        locked.save(update_fields=["current_version", "updated_at"])
    version.refresh_from_db()
    rubric.current_version = version
    return version
