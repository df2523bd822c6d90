"""Rubric pages: list, create, the editor (draft criteria, settings, history, diff, try it)
and the failed-criteria review. One template per page; htmx requests get a named partial."""

from __future__ import annotations

import uuid
from typing import Any

from django import forms
from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from evalsite.errors import page_message
from runs.scoring.text import count_criteria, parse_criteria
from runs.selectors import rubric_stats
from runs.services.try_it import rubric_try
from teams.access import TeamRequest, editor_required, team_object_or_404, team_required
from teams.selectors import judge_connections_list

from . import selectors
from .forms import (
    CriteriaFormSet,
    DraftMetaForm,
    RubricCreateForm,
    RubricSettingsForm,
    criteria_errors_onto_formset,
    draft_apply,
    draft_criteria,
    draft_differs,
    draft_formset,
    draft_rows_from_formset,
    draft_rows_from_version,
)
from .models import Criterion, Rubric, RubricVersion
from .services import (
    RubricValidationError,
    criteria_count_check,
    rubric_create,
    rubric_set_criteria,
    rubric_update,
)


def redirect_after_post(request: TeamRequest, url: str) -> HttpResponse:
    """Post/redirect/get for forms; htmx requests are told to load the page themselves, so a
    redirect never lands inside a swapped fragment."""
    if request.htmx:
        return HttpResponseClientRedirect(url)
    return redirect(url)


@team_required
@require_GET
def rubric_list(request: TeamRequest) -> HttpResponse:
    rows = rubric_stats.rubric_rows(team=request.team)
    return render(request, "rubrics/rubric_list.html", {"rows": rows})


# --- Create ------------------------------------------------------------------------------------


@editor_required
@require_http_methods(["GET", "POST"])
def rubric_new(request: TeamRequest) -> HttpResponse:
    form = RubricCreateForm(request.POST or None)
    parsed = None
    if request.method == "POST" and form.is_valid():
        parsed = _parsed_paste(form, "criteria_text")
        if parsed is not None and request.POST.get("op") == "create":
            rubric = _create(request, form)
            if rubric is not None:
                messages.success(request, f"Rubric “{rubric.name}” created.")
                return redirect_after_post(request, reverse("rubric_detail", args=[rubric.id]))
    template = "rubrics/rubric_new.html"
    if request.htmx and request.POST.get("op") == "preview":
        template += "#import-preview"
    return render(request, template, {"form": form, "parsed": parsed})


def _parsed_paste(form: forms.Form, field: str) -> list[Any] | None:
    """The criteria parsed from a paste box (the parser is linear and the field's length is
    capped), or None with the error on ``field`` when there are more than a version may hold."""
    text = form.cleaned_data.get(field) or ""
    if not _within_cap(form, field, count_criteria(text)):
        return None
    return parse_criteria(text) if text.strip() else []


def _within_cap(form: forms.Form, field: str, count: int) -> bool:
    try:
        criteria_count_check(count)
    except RubricValidationError as exc:
        form.add_error(field, exc.errors["criteria"])
        return False
    return True


def _create(request: TeamRequest, form: RubricCreateForm) -> Rubric | None:
    data = form.cleaned_data
    try:
        return rubric_create(
            team=request.team,
            name=data["name"],
            description=data["description"],
            criteria=data["criteria_text"] or None,
            user=request.user,
        )
    except RubricValidationError as exc:
        form.apply_service_errors(exc)
        return None


# --- The editor ----------------------------------------------------------------------------------


def _rubric_or_404(request: TeamRequest, rubric_id: Any) -> Rubric:
    return team_object_or_404(
        request, Rubric.objects.select_related("current_version", "judge_connection"), id=rubric_id
    )


def _diff_numbers(request: TeamRequest, versions: list[rubric_stats.VersionRow]) -> tuple[int, int]:
    """The two versions to compare: from the query, else the previous and current one."""
    numbers = [v.version.number for v in versions]
    default_new = numbers[0] if numbers else 0
    default_old = numbers[1] if len(numbers) > 1 else default_new
    return _int(request.GET.get("a"), default_old), _int(request.GET.get("b"), default_new)


def _int(value: Any, default: int) -> int:
    """A version number from the query; ``default`` for anything else (text, absurd sizes)."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        return default
    return number if 0 <= number < 2**31 else default


def _editor_context(request: TeamRequest, rubric: Rubric, **overrides: Any) -> dict[str, Any]:
    """Everything the editor page shows; a fixed number of queries."""
    current = selectors.version_criteria(version_id=rubric.current_version_id)
    versions = rubric_stats.rubric_versions(rubric=rubric)
    old, new = _diff_numbers(request, versions)
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
        "formset": draft_formset(draft_rows_from_version(current)),
        "meta": DraftMetaForm(),
        "settings_form": RubricSettingsForm.for_rubric(
            rubric, connections=judge_connections_list(team=request.team)
        ),
        "dirty": False,
    }
    context.update(overrides)
    return context


@team_required
@require_GET
def rubric_detail(request: TeamRequest, rubric_id: Any) -> HttpResponse:
    rubric = _rubric_or_404(request, rubric_id)
    template = "rubrics/rubric_detail.html"
    if request.htmx and "a" in request.GET:
        template += "#diff"
    return render(request, template, _editor_context(request, rubric))


def _posted_draft(request: TeamRequest) -> tuple[Any, DraftMetaForm, list[dict[str, Any]]]:
    formset = CriteriaFormSet(request.POST, prefix="c")
    meta = DraftMetaForm(request.POST)
    meta.is_valid()
    if not formset.is_valid():
        return formset, meta, []
    return formset, meta, draft_rows_from_formset(formset)


@editor_required
@require_POST
def rubric_criteria(request: TeamRequest, rubric_id: Any) -> HttpResponse:
    """Every change to the draft: add/delete/move rows, preview and accept a paste, save.
    Only ``save`` writes (a new version); the rest re-render the draft held in the form."""
    rubric = _rubric_or_404(request, rubric_id)
    formset, meta, rows = _posted_draft(request)
    op = request.POST.get("op", "")
    if not formset.is_valid():
        return _render_editor(request, rubric, formset=formset, meta=meta)
    if op == "save":
        return _save(request, rubric, formset, meta, rows)
    pasted = op.startswith(("preview", "import"))
    parsed = _parsed_paste(meta, "import_text") if pasted else None
    if op.startswith("import") and parsed is not None:
        imported = draft_apply(rows, op, parsed)
        # An append may push the draft past the cap: keep the draft, say why.
        if _within_cap(meta, "import_text", len(draft_criteria(imported)[0])):
            rows = imported
            meta = DraftMetaForm(initial={"note": meta.cleaned_data.get("note", "")})
        parsed = None
    elif not pasted:
        rows = draft_apply(rows, op)
    return _render_editor(
        request, rubric, formset=draft_formset(rows), meta=meta, parsed=parsed, rows=rows
    )


def _render_editor(
    request: TeamRequest, rubric: Rubric, *, rows: Any = None, **parts: Any
) -> HttpResponse:
    context = _editor_context(request, rubric, **parts)
    if rows is not None:
        context["dirty"] = draft_differs(rows, context["current_criteria"])
    template = "rubrics/rubric_detail.html"
    if request.htmx:
        template += "#criteria-editor"
    return render(request, template, context)


def _save(
    request: TeamRequest, rubric: Rubric, formset: Any, meta: DraftMetaForm, rows: list
) -> HttpResponse:
    criteria, indexes = draft_criteria(rows)
    try:
        version, created = rubric_set_criteria(
            rubric=rubric,
            criteria=criteria,
            user=request.user,
            note=meta.cleaned_data.get("note", ""),
        )
    except RubricValidationError as exc:
        leftover = criteria_errors_onto_formset(formset, exc, indexes)
        return _render_editor(
            request, rubric, formset=formset, meta=meta, draft_error=leftover, rows=rows
        )
    if created:
        messages.success(request, f"Saved as version {version.number}.")
    else:
        messages.info(request, "No changes: the criteria are the same as the current version.")
    url = reverse("rubric_detail", args=[rubric.id])
    if created and version.number > 1:
        url += f"?a={version.number - 1}&b={version.number}#history"
    return redirect_after_post(request, url)


@editor_required
@require_POST
def rubric_settings(request: TeamRequest, rubric_id: Any) -> HttpResponse:
    rubric = _rubric_or_404(request, rubric_id)
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


@editor_required
@require_POST
def rubric_try_view(request: TeamRequest, rubric_id: Any) -> HttpResponse:
    """Score one stored run with the draft criteria, saving nothing."""
    rubric = _rubric_or_404(request, rubric_id)
    formset, meta, rows = _posted_draft(request)
    criteria, _ = draft_criteria(rows)
    run = rubric_stats.rubric_try_run(rubric=rubric, run_id=request.POST.get("try_run"))
    if run is None:
        outcome = None
        error = "Pick a run to try the draft on."
    elif not criteria:
        outcome, error = None, "The draft has no criteria to try."
    else:
        outcome, error = _try(rubric, criteria, run)
    context = {"try_outcome": outcome, "try_error": error, "try_run": run}
    template = "rubrics/rubric_detail.html"
    if request.htmx:
        return render(request, template + "#try-result", context | {"rubric": rubric})
    formset = draft_formset(rows) if formset.is_valid() else formset
    return render(
        request, template, _editor_context(request, rubric, formset=formset, meta=meta, **context)
    )


def _try(rubric: Rubric, criteria: list[Any], run: Any) -> tuple[Any, str]:
    try:
        return rubric_try(rubric=rubric, criteria=criteria, run=run), ""
    except RubricValidationError as exc:
        return None, page_message(exc)


# --- Failed-criteria review ----------------------------------------------------------------------


def _version_for(request: TeamRequest, rubric: Rubric) -> RubricVersion | None:
    number = _int(request.GET.get("version"), 0)
    if number:
        version = RubricVersion.objects.filter(rubric=rubric, number=number).first()
        if version is None:
            raise Http404("No such version")
        return version
    return rubric.current_version


@team_required
@require_GET
def failures(request: TeamRequest) -> HttpResponse:
    """Pick a rubric and version; each criterion's failure count and rate, most failed first."""
    rubrics = list(
        Rubric.objects.filter(team=request.team, archived_at__isnull=True)
        .select_related("current_version")
        .order_by("name")
    )
    chosen = request.GET.get("rubric")
    filter_error = ""
    if chosen and _uuid_or_none(chosen) is None:
        # Like a malformed version number, a malformed rubric id is ignored: say so.
        filter_error = "That link names no rubric: showing the first one instead."
        chosen = None
    rubric = next((r for r in rubrics if str(r.id) == chosen), None)
    if chosen and rubric is None:
        # Archived rubrics are reviewable; others' are a 404.
        rubric = _rubric_or_404(request, chosen)
    rubric = rubric or next((r for r in rubrics if r.current_version_id), None)
    context: dict[str, Any] = {
        "rubrics": rubrics,
        "rubric": rubric,
        "rows": [],
        "version": None,
        "filter_error": filter_error,
    }
    if rubric is not None:
        version = _version_for(request, rubric)
        context.update(
            version=version,
            versions=RubricVersion.objects.filter(rubric=rubric)
            .order_by("-number")
            .only("id", "number"),
            rows=rubric_stats.rubric_failure_rates(rubric=rubric, version=version)
            if version
            else [],
        )
    template = "rubrics/failures.html"
    if request.htmx and request.GET.get("partial") == "table":
        template += "#failure-table"
    return render(request, template, context)


@team_required
@require_GET
def failures_walk(request: TeamRequest, rubric_id: Any, key: str) -> HttpResponse:
    """Walk the runs failing one criterion, newest first; j/k or the links move."""
    rubric = _rubric_or_404(request, rubric_id)
    version = _version_for(request, rubric)
    criterion = Criterion.objects.filter(version=version, key=key).first() if version else None
    if criterion is None:
        raise Http404("No such criterion in this version")
    step = rubric_stats.failing_runs_walk(
        rubric=rubric, criterion=criterion, run_id=_uuid(request.GET.get("run"))
    )
    if step is None and request.GET.get("run"):
        raise Http404("That run does not fail this criterion")
    context = {"rubric": rubric, "version": version, "criterion": criterion, "step": step}
    template = "rubrics/failures_walk.html"
    if request.htmx:
        template += "#walk"
    return render(request, template, context)


def _uuid(value: str | None) -> str | None:
    if value and _uuid_or_none(value) is None:
        raise Http404("Bad run id")
    return _uuid_or_none(value)


def _uuid_or_none(value: str | None) -> str | None:
    try:
        return str(uuid.UUID(value)) if value else None
    except ValueError:
        return None
