"""Unsaved edits: the rubric editor's working copy, one per (rubric, user).

The editor autosaves its form (criteria rows with their keys, required flags and order, the
version note, the paste box, the judge view, the token budget and the instructions) as the
user types, and renders the form from it when the page opens again. It is form state, not a
version: it is held only to the size limits versions have (so it never grows past what the
editor could save) and to its shape; whether it would save as a valid version is the save's
business. A copy that holds no edits (the same as the current version, nothing typed in the
note or paste box) is deleted instead of stored.

Not to be confused with draft *versions* (unpublished ``RubricVersion`` rows, rubrics.drafts).
"""

from __future__ import annotations

import uuid
from typing import Any, TypeVar

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from pydantic import BaseModel, ConfigDict, ValidationError

from evalsite.errors import Conflict

from .models import Criterion, JudgeView, Rubric, RubricVersion, WorkingCopy
from .services import MAX_INSTRUCTIONS_CHARS, RubricValidationError, criterion_too_long
from .versioning import view_of

State = TypeVar("State", bound=BaseModel)

# The editor's paste box holds at most this much text (rubrics.forms.DraftMetaForm).
MAX_PASTE_CHARS = 100_000
MAX_NOTE_CHARS = RubricVersion._meta.get_field("note").max_length or 300
MAX_KEY_CHARS = Criterion._meta.get_field("key").max_length or 32
# The budget box as typed (a number box may hold "1e5"): checked when a version is saved.
MAX_BUDGET_CHARS = 20


class CriterionRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key: str = ""
    description: str = ""
    required: bool = True


class WorkingCopyState(BaseModel):
    """The editor form as it was: what ``WorkingCopy.state`` holds."""

    model_config = ConfigDict(extra="forbid")

    criteria: list[CriterionRow]
    note: str = ""
    import_text: str = ""
    judge_view: str = JudgeView.FINAL.value
    run_token_budget: str = ""
    instructions: str = ""


def rows_differ(rows: list[dict[str, Any]], criteria: list[Criterion]) -> bool:
    """Whether editor rows say something else than ``criteria``: blank rows do not count, nor
    does whitespace around a description (saving strips it)."""
    wanted = [
        (r["key"], r["description"].strip(), r["required"])
        for r in rows
        if r["description"].strip()
    ]
    return wanted != [(c.key, c.description, c.required) for c in criteria]


def state_has_edits(
    state: WorkingCopyState, version: RubricVersion | None, criteria: list[Criterion]
) -> bool:
    """Whether ``state`` differs from ``version`` (whose rows are ``criteria``) in anything
    saving would keep, or holds typed text (a note, a paste) worth keeping."""
    rows = [row.model_dump() for row in state.criteria]
    view = view_of(version)
    return (
        rows_differ(rows, criteria)
        or state.judge_view != view["judge_view"]
        or state.run_token_budget.strip() != str(view["run_token_budget"])
        or state.instructions.strip() != view["instructions"]
        or bool(state.note.strip() or state.import_text.strip())
    )


def _limit_errors(state: dict[str, Any]) -> dict[str, str]:
    """The first size limit ``state`` breaks, named by its field (criteria count first)."""
    rows = state.get("criteria")
    limit = settings.EVALSITE_MAX_CRITERIA
    if isinstance(rows, list) and len(rows) > limit:
        return {"criteria": f"at most {limit:,} criteria (got {len(rows):,})"}
    for i, row in enumerate(rows if isinstance(rows, list) else []):
        row = row if isinstance(row, dict) else {}
        if problem := criterion_too_long(str(row.get("description") or ""), position=i + 1):
            return {f"criteria[{i}].description": problem}
        if len(str(row.get("key") or "")) > MAX_KEY_CHARS:
            return {f"criteria[{i}].key": f"at most {MAX_KEY_CHARS} characters"}
    return text_limit_errors(state, TEXT_LIMITS)


# The editor's free-text fields and their caps.
TEXT_LIMITS = {
    "note": MAX_NOTE_CHARS,
    "import_text": MAX_PASTE_CHARS,
    "instructions": MAX_INSTRUCTIONS_CHARS,
    "run_token_budget": MAX_BUDGET_CHARS,
}


def text_limit_errors(state: dict[str, Any], limits: dict[str, int]) -> dict[str, str]:
    """The first text field of ``state`` over its cap in ``limits`` (or holding NUL)."""
    for name, most in limits.items():
        text = str(state.get(name) or "")
        if len(text) > most:
            return {name: f"at most {most:,} characters (got {len(text):,})"}
        if "\x00" in text:  # PostgreSQL cannot store it in JSON
            return {name: "must not contain NUL characters"}
    return {}


def _field_name(loc: tuple[Any, ...]) -> str:
    """pydantic's location as the editor names fields: ``criteria[2].required``."""
    name = ""
    for part in loc:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    return name or "state"


def working_copy_validate(state: dict[str, Any]) -> WorkingCopyState:
    """``state`` checked against the limits and the shape; RubricValidationError names the
    first field that breaks them."""
    return state_validate(WorkingCopyState, state, _limit_errors(state))


def state_validate(model: type[State], state: dict[str, Any], errors: dict[str, str]) -> State:
    """``state`` as ``model`` (a form's autosaved state, which has a ``judge_view``), or
    RubricValidationError naming the first field that breaks a limit (``errors``, found by the
    caller) or the shape."""
    if errors:
        raise RubricValidationError(errors)
    try:
        parsed = model.model_validate(state)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise RubricValidationError({_field_name(first["loc"]): first["msg"]}) from exc
    view = getattr(parsed, "judge_view", None)
    if view not in JudgeView.values:
        raise RubricValidationError({"judge_view": f"not a judge view: {view!r}"})
    return parsed


def _base_version(rubric: Rubric, number: int | None) -> RubricVersion | None:
    if number is None:
        return None
    version = RubricVersion.objects.filter(rubric=rubric, number=number).first()
    if version is None:
        raise RubricValidationError({"base_version": f"this rubric has no version {number}"})
    return version


class WorkingCopyConflict(Conflict):
    """Edits from an editor page older than what the server holds (409): saving them would
    overwrite newer edits, or bring back edits already saved as a version or discarded."""


def _check_based_on(
    rubric: Rubric, copy: WorkingCopy | None, based_on: uuid.UUID | None, base: int | None
) -> None:
    """Refuse edits whose page was rendered from another state than the one stored: the copy
    at revision ``based_on`` (None: no copy, the form loaded from version number ``base``)."""
    reload = "Reload the page to continue from them."
    if copy is not None and copy.revision != based_on:
        when = f"{timezone.localtime(copy.updated_at):%H:%M}"
        raise WorkingCopyConflict(
            f"Not saved: newer edits of this rubric were saved at {when}, in another tab or "
            f"after this page was opened. {reload}"
        )
    if copy is None and based_on is not None:
        raise WorkingCopyConflict(
            "Not saved: the edits this page shows were saved as a version or discarded since "
            "it was opened. Reload the page to edit the current version."
        )
    current = Rubric.objects.filter(pk=rubric.pk).values_list("current_version__number").get()[0]
    if copy is None and base != current:
        raise WorkingCopyConflict(
            f"Not saved: version {current} was saved after this page was opened (from version "
            f"{base}). Reload the page to edit it."
        )


def working_copy_save(
    *,
    rubric: Rubric,
    user: Any,
    state: dict[str, Any],
    base_number: int | None,
    based_on: uuid.UUID | None,
) -> WorkingCopy | None:
    """Store ``user``'s unsaved edits of ``rubric``: the editor form loaded from version
    ``base_number`` and, when the page had one, from the copy at revision ``based_on``. Edits
    that match the current version are no edits: the copy is deleted and None returned.

    Compare-and-set: a page rendered from another revision than the stored copy's (or with a
    copy when none is stored any more, or from a version that is no longer current when none
    is) raises WorkingCopyConflict and changes nothing. Raises RubricValidationError naming
    the field over a limit."""
    parsed = working_copy_validate(state)
    base = _base_version(rubric, base_number)
    rubric.refresh_from_db(fields=["current_version"])
    criteria = list(
        Criterion.objects.filter(version_id=rubric.current_version_id).order_by("position")
    )
    with transaction.atomic():
        copy = WorkingCopy.objects.select_for_update().filter(rubric=rubric, user=user).first()
        _check_based_on(rubric, copy, based_on, base_number)
        if not state_has_edits(parsed, rubric.current_version, criteria):
            working_copy_discard(rubric=rubric, user=user)
            return None
        if copy is None:
            copy = WorkingCopy(rubric=rubric, user=user)
        copy.state, copy.base_version, copy.revision = parsed.model_dump(), base, uuid.uuid4()
        try:
            with transaction.atomic():
                copy.save()
        except IntegrityError as exc:  # another request created the copy meanwhile
            raise WorkingCopyConflict(
                "Not saved: other edits of this rubric were saved at the same moment. Reload "
                "the page to continue from them."
            ) from exc
    return copy


def working_copy_revision(*, rubric: Rubric, user: Any) -> uuid.UUID | None:
    """The revision of ``user``'s copy of ``rubric`` the editor page is rendered from (None:
    no copy): its autosaves send it back."""
    found = WorkingCopy.objects.filter(rubric=rubric, user=user).values_list("revision")
    row = found.first()
    return row[0] if row else None


def working_copy_discard(*, rubric: Rubric, user: Any) -> bool:
    """Delete ``user``'s unsaved edits of ``rubric``; whether there were any."""
    deleted, _ = WorkingCopy.objects.filter(rubric=rubric, user=user).delete()
    return deleted > 0


def working_copy_get(*, rubric: Rubric, user: Any) -> WorkingCopy | None:
    """``user``'s own unsaved edits of ``rubric`` (nobody else's), with their base version."""
    return (
        WorkingCopy.objects.select_related("base_version").filter(rubric=rubric, user=user).first()
    )


def working_copy_to_restore(
    *, rubric: Rubric, user: Any, criteria: list[Criterion]
) -> tuple[WorkingCopy, WorkingCopyState] | None:
    """The unsaved edits the editor opens with: ``user``'s copy when it differs from the
    current version (whose rows are ``criteria``), with its parsed state; else None."""
    copy = working_copy_get(rubric=rubric, user=user)
    if copy is None:
        return None
    state = WorkingCopyState.model_validate(copy.state)
    if not state_has_edits(state, rubric.current_version, criteria):
        return None
    return copy, state
