"""The rubric editor's unsaved edits (rubrics.working_copy): autosave, read and discard one's
own working copy, and the editor's form rendered from it when the page opens.

The autosave endpoint takes the editor form as the browser posts it (the same field names as
the editor's ``#criteria-draft`` form) and answers JSON: the editor's script posts it as the
user types and says what the server holds. Discarding is a plain form post (redirect after
POST). Every call is the caller's own copy of a rubric of their team (another team's rubric
is a 404); viewers edit nothing (403)."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import messages
from django.http import HttpResponse, JsonResponse
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from evalsite.errors import AppError, FieldErrors, page_message
from teams.access import TeamRequest, editor_required

from .forms import (
    CriteriaFormSet,
    DraftMetaForm,
    DraftViewForm,
    draft_criteria,
    draft_formset,
    draft_rows_from_formset,
)
from .models import Criterion, Rubric, WorkingCopy
from .services import CriterionInput, RubricValidationError
from .versioning import save_number
from .views_common import redirect_after_post, rubric_or_404
from .working_copy import (
    WorkingCopyConflict,
    WorkingCopyState,
    working_copy_discard,
    working_copy_get,
    working_copy_save,
    working_copy_to_restore,
)

# The editor form's fields besides its criteria rows, kept as typed.
TEXT_FIELDS = ("note", "import_text", "judge_view", "run_token_budget", "instructions")


def saved_label(copy: WorkingCopy) -> str:
    """When the server last took the edits, as the editor's state note says it."""
    return f"Unsaved edits saved {timezone.localtime(copy.updated_at):%H:%M}"


def _posted_rows(request: TeamRequest) -> list[dict[str, Any]]:
    """The criteria rows as posted, read by the editor's own formset (at most the cap plus
    one rows); RubricValidationError names a row field the formset refuses."""
    formset = CriteriaFormSet(request.POST, prefix="c")
    if formset.is_valid():
        return draft_rows_from_formset(formset)
    errors: dict[str, str] = {}
    if formset.non_form_errors():
        errors["criteria"] = " ".join(str(m) for m in formset.non_form_errors())
    for i, form in enumerate(formset.forms):
        errors |= {f"criteria[{i}].{k}": " ".join(map(str, v)) for k, v in form.errors.items()}
    raise RubricValidationError(errors or {"criteria": "the criteria rows are malformed"})


def _base_number(request: TeamRequest) -> int | None:
    value = request.POST.get("base_version", "")
    if not value:
        return None
    if not value.isdigit() or len(value) > 9:
        raise RubricValidationError({"base_version": "must be a version number"})
    return int(value)


def _based_on(request: TeamRequest) -> uuid.UUID | None:
    """The revision of the copy the page was rendered from; empty: the page had none."""
    value = request.POST.get("revision", "")
    if not value:
        return None
    try:
        return uuid.UUID(value)
    except ValueError:
        raise RubricValidationError({"revision": "must be a revision id"}) from None


def _error_answer(exc: AppError) -> JsonResponse:
    """The editor's script shows ``message``; ``extra.errors`` names each field."""
    extra = {"errors": exc.errors} if isinstance(exc, FieldErrors) else {}
    return JsonResponse({"message": page_message(exc), "extra": extra}, status=exc.status)


def _save_number(rubric: Rubric, state: WorkingCopyState | None) -> int:
    """The version number saving these edits makes (None: no edits, the current version)."""
    if state is None:
        current = Criterion.objects.filter(version_id=rubric.current_version_id)
        criteria = [CriterionInput(c.description, c.required, c.key) for c in current]
        return save_number(rubric=rubric, criteria=criteria, view={})
    budget = state.run_token_budget.strip()
    view = {
        "judge_view": state.judge_view,
        "run_token_budget": int(budget) if budget.isdigit() and len(budget) < 10 else None,
        "instructions": state.instructions.strip(),
    }
    criteria, _ = draft_criteria([row.model_dump() for row in state.criteria])
    return save_number(rubric=rubric, criteria=criteria, view=view)


def _copy_answer(copy: WorkingCopy | None, rubric: Rubric) -> JsonResponse:
    """What the server holds now; the editor's next autosave is based on ``revision`` (none
    when there is no copy) and ``base_version``. ``save_number``: the version number saving
    the edits makes (the save button shows it)."""
    if copy is None:
        current = rubric.current_version.number if rubric.current_version else None
        return JsonResponse(
            {
                "state": "clean",
                "label": "No unsaved edits",
                "revision": None,
                "base_version": current,
                "save_number": _save_number(rubric, None),
            }
        )
    return JsonResponse(
        {
            "state": "saved",
            "label": saved_label(copy),
            "saved_at": copy.updated_at.isoformat(),
            "revision": str(copy.revision),
            "base_version": copy.base_version.number if copy.base_version else None,
            "edits": copy.state,
            "save_number": _save_number(rubric, WorkingCopyState.model_validate(copy.state)),
        }
    )


@editor_required
@require_http_methods(["GET", "POST"])
def rubric_working_copy(request: TeamRequest, rubric_id: Any) -> HttpResponse:
    """GET: the caller's unsaved edits of the rubric (404 when there are none). POST: store
    the editor form as posted (``base_version``: the version number it was loaded from,
    ``revision``: the copy's revision the page was rendered from, empty when none); over a
    limit is a 422 naming the field, a page older than what is stored a 409 saying so."""
    rubric = rubric_or_404(request, rubric_id)
    if request.method == "GET":
        copy = working_copy_get(rubric=rubric, user=request.user)
        if copy is None:
            return JsonResponse({"message": "No unsaved edits of this rubric."}, status=404)
        return _copy_answer(copy, rubric)
    try:
        state: dict[str, Any] = {"criteria": _posted_rows(request)}
        state |= {name: request.POST.get(name, "") for name in TEXT_FIELDS}
        copy = working_copy_save(
            rubric=rubric,
            user=request.user,
            state=state,
            base_number=_base_number(request),
            based_on=_based_on(request),
        )
    except (RubricValidationError, WorkingCopyConflict) as exc:
        return _error_answer(exc)
    return _copy_answer(copy, rubric)


@editor_required
@require_POST
def rubric_working_copy_discard(request: TeamRequest, rubric_id: Any) -> HttpResponse:
    """Delete the caller's unsaved edits; the editor shows the saved version again."""
    rubric = rubric_or_404(request, rubric_id)
    if working_copy_discard(rubric=rubric, user=request.user):
        messages.info(request, "Unsaved edits discarded: the editor shows the saved version.")
    return redirect_after_post(request, reverse("rubric_detail", args=[rubric.id]))


def restored_editor(request: TeamRequest, rubric: Rubric, criteria: list[Criterion]) -> dict:
    """What the editor page shows instead of the current version (``criteria``) when the
    caller has unsaved edits of it: the form from the edits and the notice saying so."""
    current = rubric.current_version.number if rubric.current_version else None
    found = working_copy_to_restore(rubric=rubric, user=request.user, criteria=criteria)
    if found is None:
        return {"base_number": current}
    copy, state = found
    base = copy.base_version.number if copy.base_version else None
    return {
        "formset": draft_formset([row.model_dump() for row in state.criteria]),
        "meta": DraftMetaForm(initial={"note": state.note, "import_text": state.import_text}),
        "view_form": DraftViewForm.posted(_view_values(state), rubric.current_version),
        "dirty": True,
        "working_copy": copy,
        "working_copy_label": saved_label(copy),
        "base_number": base,
        "base_outdated": base is not None and current is not None and base != current,
    }


def _view_values(state: WorkingCopyState) -> dict[str, str]:
    return {
        "judge_view": state.judge_view,
        "run_token_budget": state.run_token_budget,
        "instructions": state.instructions,
    }
