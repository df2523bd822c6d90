"""The rubric list and the New rubric page: name, description, pasted criteria, and what the
judge sees (judge view, token budget) for version 1. The form is autosaved as unsaved input
(rubrics.new_rubric_copy) by the editor's script (static/js/draft_guard.js) and shown again
when the page opens; creating the rubric or discarding the input ends it."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from runs.selectors import rubric_stats
from teams.access import TeamRequest, editor_required, team_required

from .forms import DraftViewForm, RubricCreateForm
from .models import Rubric, WorkingCopy
from .new_rubric_copy import (
    new_rubric_copy_discard,
    new_rubric_copy_get,
    new_rubric_copy_save,
)
from .services import RubricValidationError, rubric_create
from .views_common import parsed_paste, paste_lines, redirect_after_post
from .views_draft import DRAFT_OPS, draft_state
from .views_working_copy import _based_on, _error_answer, saved_label
from .working_copy import WorkingCopyConflict

# The fields the autosave keeps (RubricCreateForm's and the judge view's), as typed.
INPUT_FIELDS = ("name", "description", "criteria_text", "judge_view", "run_token_budget")


@team_required
@require_GET
def rubric_list(request: TeamRequest) -> HttpResponse:
    rows = rubric_stats.rubric_rows(team=request.team)
    return render(request, "rubrics/rubric_list.html", {"rows": rows})


@never_cache
@editor_required
@require_http_methods(["GET", "POST"])
def rubric_new(request: TeamRequest) -> HttpResponse:
    if request.method == "POST" and request.POST.get("op") in DRAFT_OPS:
        return _drafting(request)
    copy = None
    if request.method == "POST":
        form = RubricCreateForm(request.POST)
        view_form = DraftViewForm.posted(request.POST, None)
    else:  # the caller's unsaved input, if any: the form opens with it
        copy = new_rubric_copy_get(team=request.team, user=request.user)
        form = RubricCreateForm(initial=copy.state if copy is not None else None)
        view_form = DraftViewForm.posted(copy.state if copy is not None else {}, None)
    parsed = None
    valid = request.method == "POST" and view_form.is_valid()
    if form.is_valid() and valid:
        parsed = parsed_paste(form, "criteria_text")
        if parsed is not None and request.POST.get("op") == "create":
            rubric = _create(request, form, view_form)
            if rubric is not None:
                new_rubric_copy_discard(team=request.team, user=request.user)
                messages.success(request, f"Rubric “{rubric.name}” created.")
                return redirect_after_post(request, reverse("rubric_detail", args=[rubric.id]))
    template = "rubrics/rubric_new.html"
    if request.htmx and request.POST.get("op") == "preview":
        template += "#import-preview"
    context = {
        "form": form,
        "view_form": view_form,
        "parsed": parsed,
        "paste": paste_lines(form, "criteria_text", parsed),
        "working_copy": copy,
        "working_copy_label": saved_label(copy) if copy is not None else "",
        # What the page's autosaves build on: the stored copy's revision (none: no copy).
        "revision": _revision(request) if copy is None else copy.revision,
        # A page rendered from a post may hold input the server does not have yet.
        "dirty": request.method == "POST",
    }
    return render(request, template, context)


def _drafting(request: TeamRequest) -> HttpResponse:
    """A draft op: the form as typed (unvalidated: a rubric may be named after drafting), with
    the drafted rows, or the Criteria box grown by the kept ones."""
    state = draft_state(request)
    initial = {name: request.POST.get(name, "") for name in INPUT_FIELDS}
    if state["criteria_text"] is not None:
        initial["criteria_text"] = state["criteria_text"]
    form = RubricCreateForm(initial=initial)
    template = "rubrics/rubric_new.html"
    if request.htmx and request.POST.get("op") == "draft":
        template += "#criteria-draft"
    context = {
        "form": form,
        "view_form": DraftViewForm.posted({k: v for k, v in initial.items() if v}, None),
        "parsed": None,
        "paste": paste_lines(form, "criteria_text", None),
        "working_copy": None,
        "working_copy_label": "",
        "revision": _revision(request),
        "dirty": True,
        **state,
    }
    return render(request, template, context)


def _revision(request: TeamRequest) -> Any:
    copy = new_rubric_copy_get(team=request.team, user=request.user)
    return copy.revision if copy is not None else ""


def _create(
    request: TeamRequest, form: RubricCreateForm, view_form: DraftViewForm
) -> Rubric | None:
    data, view = form.cleaned_data, view_form.cleaned_data
    try:
        return rubric_create(
            team=request.team,
            name=data["name"],
            description=data["description"],
            criteria=data["criteria_text"] or None,
            judge_view=view["judge_view"],
            run_token_budget=view["run_token_budget"],
            user=request.user,
        )
    except RubricValidationError as exc:
        rest = view_form.take_service_errors(exc)
        if rest is not None:
            form.apply_service_errors(rest)
        return None


def _input_answer(copy: WorkingCopy | None) -> JsonResponse:
    """What the server holds now, in the shape the editor's autosave answers."""
    if copy is None:
        return JsonResponse(
            {"state": "clean", "label": "No unsaved edits", "revision": None, "base_version": None}
        )
    return JsonResponse(
        {
            "state": "saved",
            "label": saved_label(copy),
            "saved_at": copy.updated_at.isoformat(),
            "revision": str(copy.revision),
            "base_version": None,
            "edits": copy.state,
        }
    )


@editor_required
@require_http_methods(["GET", "POST"])
def rubric_new_input(request: TeamRequest) -> HttpResponse:
    """GET: the caller's unsaved New rubric input in this team (404 when none). POST: store
    the form as posted (``revision``: the copy's revision the page was rendered from, empty
    when none); over a limit is a 422 naming the field, an older page a 409 saying so."""
    if request.method == "GET":
        copy = new_rubric_copy_get(team=request.team, user=request.user)
        if copy is None:
            return JsonResponse({"message": "No unsaved input for a new rubric."}, status=404)
        return _input_answer(copy)
    try:
        copy = new_rubric_copy_save(
            team=request.team,
            user=request.user,
            state={name: request.POST.get(name, "") for name in INPUT_FIELDS},
            based_on=_based_on(request),
        )
    except (RubricValidationError, WorkingCopyConflict) as exc:
        return _error_answer(exc)
    return _input_answer(copy)


@editor_required
@require_POST
def rubric_new_input_discard(request: TeamRequest) -> HttpResponse:
    """Delete the caller's unsaved New rubric input; the page opens blank again."""
    if new_rubric_copy_discard(team=request.team, user=request.user):
        messages.info(request, "Unsaved edits discarded.")
    return redirect_after_post(request, reverse("rubric_new"))
