"""The rubric editor (criteria and judge view as unsaved edits, settings, history, diff, try
it). One template per page; htmx requests get a named partial."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from evalsite.errors import page_message
from judging.services.try_it import rubric_try
from reviews.views_compare import gated_save
from runs.selectors import rubric_stats, trends
from teams.access import TeamRequest, editor_required, team_required
from teams.selectors import judge_connections_list

from . import selectors
from .examples import (
    MAX_EXCERPT_CHARS,
    MAX_REASON_CHARS,
    examples_limit,
    examples_pending,
)
from .forms import (
    CriteriaFormSet,
    DraftMetaForm,
    DraftViewForm,
    RubricSettingsForm,
    criteria_errors_onto_formset,
    draft_apply,
    draft_criteria,
    draft_differs,
    draft_formset,
    draft_rows_from_formset,
    draft_rows_from_version,
)
from .models import Rubric
from .services import (
    VERSION_FIELDS,
    RubricValidationError,
    rubric_set_criteria,
    rubric_update,
)
from .versioning import save_number
from .views_common import (
    int_param,
    parsed_paste,
    paste_lines,
    redirect_after_post,
    rubric_or_404,
    within_cap,
)
from .views_working_copy import restored_editor
from .working_copy import working_copy_discard, working_copy_revision

# --- The editor ----------------------------------------------------------------------------------


def _diff_numbers(request: TeamRequest, versions: list[rubric_stats.VersionRow]) -> tuple[int, int]:
    """The two versions to compare: from the query, else the previous and current one."""
    numbers = [v.version.number for v in versions]
    default_new = numbers[0] if numbers else 0
    default_old = numbers[1] if len(numbers) > 1 else default_new
    return int_param(request.GET.get("a"), default_old), int_param(
        request.GET.get("b"), default_new
    )


def _editor_context(request: TeamRequest, rubric: Rubric, **overrides: Any) -> dict[str, Any]:
    """Everything the editor page shows; a fixed number of queries."""
    current = selectors.version_criteria(version_id=rubric.current_version_id)
    versions = rubric_stats.rubric_versions(rubric=rubric)
    old, new = _diff_numbers(request, versions)
    old_version, new_version = _version_numbered(versions, old), _version_numbered(versions, new)
    diff = selectors.rubric_version_diff(rubric=rubric, old_number=old, new_number=new)
    context: dict[str, Any] = {
        "rubric": rubric,
        "current_criteria": current,
        "versions": versions,
        "diff_old": old,
        "diff_new": new,
        "diff_changes": [e for e in diff if e.kind != "unchanged"],
        "diff_unchanged": sum(1 for e in diff if e.kind == "unchanged"),
        "try_runs": rubric_stats.rubric_try_runs(rubric=rubric),
        **trends.chart_data(trends.rubric_trend(rubric=rubric)),
        "formset": draft_formset(draft_rows_from_version(current)),
        "meta": DraftMetaForm(),
        "view_form": DraftViewForm.posted({}, rubric.current_version),
        "view_diff": selectors.version_view_diff(old=old_version, new=new_version)
        + selectors.version_examples_diff(old=old_version, new=new_version),
        **_examples_context(rubric, current),
        "settings_form": RubricSettingsForm.for_rubric(
            rubric, connections=judge_connections_list(team=request.team)
        ),
        "dirty": False,
        # What the editor's autosaves are based on (restored edits say their own base).
        "base_number": rubric.current_version.number if rubric.current_version else None,
        "revision": working_copy_revision(rubric=rubric, user=request.user),
    }
    context.update(overrides)
    # Called by the template once the page's form is final (restored edits, a re-render).
    context["save_number"] = lambda: _save_number(rubric, context["formset"], context["view_form"])
    return context


def _save_number(rubric: Rubric, formset: Any, view_form: DraftViewForm) -> int:
    """The version number the save button makes of the form as rendered."""
    if formset.is_bound:
        rows = draft_rows_from_formset(formset) if formset.is_valid() else []
    else:
        rows = formset.initial or []
    criteria, _ = draft_criteria(rows)
    view = view_form.cleaned_data if view_form.is_valid() else {}
    return save_number(
        rubric=rubric, criteria=criteria, view={k: view.get(k) for k in VERSION_FIELDS}
    )


def _examples_context(rubric: Rubric, criteria: list[Any]) -> dict[str, Any]:
    """The draft's graded examples, each with its criterion's wording."""
    described = {c.key: c.description for c in criteria}
    examples = selectors.examples_draft_rows(rubric=rubric)
    for example in examples:
        example.criterion_description = described.get(example.criterion_key, "")  # type: ignore[attr-defined]
    return {
        "examples": examples,
        "examples_pending": examples_pending(rubric=rubric),
        "examples_limit": examples_limit(),
        "excerpt_max": MAX_EXCERPT_CHARS,
        "reason_max": MAX_REASON_CHARS,
    }


def _version_numbered(versions: list[rubric_stats.VersionRow], number: int) -> Any:
    return next((row.version for row in versions if row.version.number == number), None)


@never_cache
@team_required
@require_GET
def rubric_detail(request: TeamRequest, rubric_id: Any) -> HttpResponse:
    rubric = rubric_or_404(request, rubric_id)
    template, context = "rubrics/rubric_detail.html", _editor_context(request, rubric)
    if request.htmx and "a" in request.GET:
        return render(request, template + "#diff", context)
    context |= restored_editor(request, rubric, context["current_criteria"])  # unsaved edits
    return render(request, template, context)


def _posted_draft(
    request: TeamRequest, rubric: Rubric
) -> tuple[Any, DraftMetaForm, DraftViewForm, list[dict[str, Any]]]:
    """The draft as posted: criteria rows, note and paste box, and what the judge sees."""
    formset = CriteriaFormSet(request.POST, prefix="c")
    meta = DraftMetaForm(request.POST)
    meta.is_valid()
    view_form = DraftViewForm.posted(request.POST, rubric.current_version)
    view_form.is_valid()
    if not formset.is_valid():
        return formset, meta, view_form, []
    return formset, meta, view_form, draft_rows_from_formset(formset)


@never_cache
@editor_required
@require_POST
def rubric_criteria(request: TeamRequest, rubric_id: Any) -> HttpResponse:
    """Every change to the draft: add/delete/move rows, preview and accept a paste, save.
    Only ``save`` writes (a new version); the rest re-render the draft held in the form."""
    rubric = rubric_or_404(request, rubric_id)
    formset, meta, view_form, rows = _posted_draft(request, rubric)
    op = request.POST.get("op", "")
    if not formset.is_valid():
        return _render_editor(request, rubric, formset=formset, meta=meta, view_form=view_form)
    if op == "save":
        return _save(request, rubric, formset, meta, view_form, rows)
    pasted = op.startswith(("preview", "import"))
    parsed = parsed_paste(meta, "import_text") if pasted else None
    if op.startswith("import") and parsed is not None:
        imported = draft_apply(rows, op, parsed)
        # An append may push the draft past the cap: keep the draft, say why.
        if within_cap(meta, "import_text", len(draft_criteria(imported)[0])):
            rows = imported
            meta = DraftMetaForm(initial={"note": meta.cleaned_data.get("note", "")})
        parsed = None
    elif not pasted:
        rows = draft_apply(rows, op)
    return _render_editor(
        request,
        rubric,
        formset=draft_formset(rows),
        meta=meta,
        view_form=view_form,
        parsed=parsed,
        paste=paste_lines(meta, "import_text", parsed),
        rows=rows,
    )


def _render_editor(
    request: TeamRequest, rubric: Rubric, *, rows: Any = None, **parts: Any
) -> HttpResponse:
    context = _editor_context(request, rubric, **parts)
    if rows is not None:
        context["dirty"] = (
            draft_differs(rows, context["current_criteria"])
            or context["view_form"].differs(rubric.current_version)
            or context["examples_pending"]
        )
    template = "rubrics/rubric_detail.html"
    if request.htmx:
        template += "#criteria-editor"
    return render(request, template, context)


def _save(
    request: TeamRequest,
    rubric: Rubric,
    formset: Any,
    meta: DraftMetaForm,
    view_form: DraftViewForm,
    rows: list,
) -> HttpResponse:
    criteria, indexes = draft_criteria(rows)
    draft = {"formset": formset, "meta": meta, "view_form": view_form, "rows": rows}
    if not view_form.is_valid():
        return _render_editor(request, rubric, **draft)
    number = _save_number(rubric, formset, view_form)
    if request.POST.get("expected_number", str(number)) != str(number):
        # The button showed another number (edits typed after the last autosave answered):
        # nothing is saved under a number the user did not see.
        return _render_editor(
            request, rubric, draft_error=f"Saving these edits makes version {number}, not the "
            f"number the button showed. Press “Save as version {number}” again to save.", **draft
        )  # fmt: skip
    if rubric.gate and rubric.current_version_id:  # published once it passes the gate
        note = meta.cleaned_data.get("note", "")
        return gated_save(
            request, rubric, {"criteria": criteria, "note": note, **view_form.cleaned_data}
        )
    try:
        version, created = rubric_set_criteria(
            rubric=rubric,
            criteria=criteria,
            user=request.user,
            note=meta.cleaned_data.get("note", ""),
            judge_view=view_form.cleaned_data["judge_view"],
            run_token_budget=view_form.cleaned_data["run_token_budget"],
            instructions=view_form.cleaned_data["instructions"],
        )
    except RubricValidationError as exc:
        rest = view_form.take_service_errors(exc)
        leftover = criteria_errors_onto_formset(formset, rest, indexes) if rest else ""
        return _render_editor(request, rubric, draft_error=leftover, **draft)
    working_copy_discard(rubric=rubric, user=request.user)  # the edits are a version now
    if created:
        messages.success(request, f"Saved as version {version.number}.")
    else:
        messages.info(
            request,
            "No changes: the criteria, what the judge sees, the instructions and the examples "
            "are the same as the current version.",
        )
    url = reverse("rubric_detail", args=[rubric.id])
    if created and version.number > 1:
        url += f"?a={version.number - 1}&b={version.number}#history"
    return redirect_after_post(request, url)


@never_cache
@editor_required
@require_POST
def rubric_settings(request: TeamRequest, rubric_id: Any) -> HttpResponse:
    rubric = rubric_or_404(request, rubric_id)
    form = RubricSettingsForm(request.POST, connections=judge_connections_list(team=request.team))
    if form.is_valid():
        try:
            rubric_update(rubric=rubric, user=request.user, **form.service_fields())
        except RubricValidationError as exc:
            form.apply_service_errors(exc)
        else:
            messages.success(request, "Judge settings saved.")
            return redirect_after_post(request, reverse("rubric_detail", args=[rubric.id]))
    template = "rubrics/rubric_detail.html"
    if request.htmx:
        template += "#settings-form"
    return render(request, template, _editor_context(request, rubric, settings_form=form))


@never_cache
@editor_required
@require_POST
def rubric_try_view(request: TeamRequest, rubric_id: Any) -> HttpResponse:
    """Score one stored run with the draft criteria and judge view, saving nothing."""
    rubric = rubric_or_404(request, rubric_id)
    formset, meta, view_form, rows = _posted_draft(request, rubric)
    criteria, _ = draft_criteria(rows)
    run = rubric_stats.rubric_try_run(rubric=rubric, run_id=request.POST.get("try_run"))
    if run is None:
        outcome = None
        error = "Pick a run to try your edits on."
    elif not criteria:
        outcome, error = None, "Your edits have no criteria to try."
    elif not view_form.is_valid():
        outcome, error = None, "Fix what the judge sees (judge view and token budget) first."
    else:
        outcome, error = _try(rubric, criteria, view_form.cleaned_data, run)
    context = {"try_outcome": outcome, "try_error": error, "try_run": run}
    template = "rubrics/rubric_detail.html"
    if request.htmx:
        return render(request, template + "#try-result", context | {"rubric": rubric})
    formset = draft_formset(rows) if formset.is_valid() else formset
    return render(
        request,
        template,
        _editor_context(
            request, rubric, formset=formset, meta=meta, view_form=view_form, **context
        ),
    )


def _try(rubric: Rubric, criteria: list[Any], view: dict[str, Any], run: Any) -> tuple[Any, str]:
    try:
        outcome = rubric_try(
            rubric=rubric,
            criteria=criteria,
            run=run,
            judge_view=view["judge_view"],
            run_token_budget=view["run_token_budget"],
        )
        return outcome, ""
    except RubricValidationError as exc:
        return None, page_message(exc)
