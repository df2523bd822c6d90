"""Suggested criterion edits on the pages: the rubric's suggestions page (also the panel the rubric
editor loads with htmx), "Suggest an edit", Accept and Dismiss (plain forms that redirect back,
so everything works without JavaScript)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from evalsite.errors import AppError, page_message
from rubrics.models import Rubric
from teams.access import TeamRequest, editor_required, team_required

from .selectors.suggestions import disagreements_by_criterion, open_suggestions, suggestion_get
from .services.suggestion_decide import suggestion_accept, suggestion_dismiss
from .services.suggestions import suggestions_request
from .views import rubric_or_404

PAGE = "reviews/suggestions.html"


def suggestions_context(rubric: Rubric, back: str) -> dict[str, Any]:
    """What the panel (and the review page, per criterion) shows: each criterion of the current
    version with its disagreeing labels and its open suggestions."""
    found = open_suggestions(rubric=rubric)
    rows = disagreements_by_criterion(rubric=rubric)
    pending_keys = {k for k, items in found.items() if any(s.status == "pending" for s in items)}
    # "Suggest an edit" is offered where no suggestion waits for the judge or for a decision.
    open_keys = {k for k, items in found.items() if any(s.status != "failed" for s in items)}
    return {
        "rubric": rubric,
        "suggest_rows": rows,
        "suggest_by_key": {r.key: r for r in rows},
        "suggestions": found,
        "suggest_pending": bool(pending_keys),
        "open_keys": open_keys,
        "back": back,
    }


def _back(request: HttpRequest, rubric: Rubric) -> str:
    wanted = request.POST.get("next") or request.GET.get("next") or ""
    # A path of this site only (redirect() would read anything else as a view name).
    local = wanted.startswith("/") and not wanted.startswith("//")
    if local and url_has_allowed_host_and_scheme(wanted, allowed_hosts={request.get_host()}):
        return wanted
    return reverse("reviews:suggestions", args=[rubric.pk])


@never_cache
@team_required
@require_GET
def suggestions(request: HttpRequest, rubric_id: Any) -> HttpResponse:
    rubric = rubric_or_404(request, rubric_id)
    context = suggestions_context(rubric, _back(request, rubric))
    template = PAGE + "#panel" if request.htmx else PAGE  # type: ignore[attr-defined]
    return render(request, template, context)


@editor_required
@require_POST
def suggest_start(request: TeamRequest, rubric_id: Any) -> HttpResponse:
    rubric = rubric_or_404(request, rubric_id)
    criterion = (request.POST.get("criterion") or "").strip() or None
    try:
        made = suggestions_request(
            team=request.team,
            rubric=rubric,
            criterion_id=criterion,
            user=request.user,
        )
    except AppError as exc:
        messages.error(request, page_message(exc))
    else:
        keys = ", ".join(s.criterion_key for s in made)
        messages.success(
            request, f"Asking the judge for an edit of {keys}: it appears here shortly."
        )
    return redirect(_back(request, rubric))


@editor_required
@require_POST
def suggestion_accept_view(
    request: TeamRequest, rubric_id: Any, suggestion_id: Any
) -> HttpResponse:
    rubric = rubric_or_404(request, rubric_id)
    found = suggestion_get(rubric=rubric, suggestion_id=suggestion_id)
    if found is None:
        messages.error(request, "That suggestion no longer exists.")
        return redirect(_back(request, rubric))
    try:
        accepted = suggestion_accept(
            team=request.team,
            rubric=rubric,
            suggestion=found,
            user=request.user,
        )
    except AppError as exc:
        messages.error(request, page_message(exc))
        return redirect(_back(request, rubric))
    if accepted.comparison_id is None or accepted.draft is None:  # its comparison was deleted
        return redirect(_back(request, rubric))
    number = accepted.draft.number
    messages.success(
        request,
        f"Saved as draft version {number}, now compared with the current version on the "
        "labelled runs. Publish it from the rubric editor once it holds up.",
    )
    return redirect(reverse("reviews:comparison", args=[accepted.comparison_id]))


@editor_required
@require_POST
def suggestion_dismiss_view(
    request: HttpRequest, rubric_id: Any, suggestion_id: Any
) -> HttpResponse:
    rubric = rubric_or_404(request, rubric_id)
    found = suggestion_get(rubric=rubric, suggestion_id=suggestion_id)
    if found is not None:
        try:
            suggestion_dismiss(suggestion=found, user=request.user)
            messages.success(request, f"Suggested edit of {found.criterion_key} dismissed.")
        except AppError as exc:
            messages.error(request, page_message(exc))
    return redirect(_back(request, rubric))
