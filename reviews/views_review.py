"""Reviewing one run: agreeing or disagreeing with the judge per criterion, alignment scores,
reverting a change, the golden-set mark, and teaching the judge (a reviewed verdict becomes a
graded example of its criterion).

Every form is a plain POST that redirects back to the review page (the keyboard shortcuts in
static/js/reviews.js only press these buttons), so the page works without JavaScript.
"""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from evalsite.errors import page_message
from rubrics.examples import example_add
from rubrics.models import Rubric
from rubrics.services import RubricValidationError
from runs.models import AgentRun
from teams.access import editor_required, team_required

from . import selectors, services
from .selectors.examples import label_in_effect
from .services import ReviewConflict, Reviewer, ReviewValidationError
from .views import review_url, rubric_or_404, run_or_404
from .views_suggest import suggestions_context

UNLABELLED = "review this criterion first: an example teaches the reviewers' verdict"


def _uuid(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError as exc:
        raise Http404("No such change") from exc


# --- Reviewing one run ------------------------------------------------------------------------


def _review_context(
    request: HttpRequest, rubric: Rubric, run: AgentRun, **extra: Any
) -> dict[str, Any]:
    view = selectors.run_review_get(
        run=run, rubric_id=rubric.pk, reviewer_key=Reviewer(user=request.user).key
    )
    if view.evaluation is None:
        raise Http404("This run has no judged result for this rubric")
    newer, older = selectors.queue_neighbours(rubric=rubric, run=run)
    filters = selectors.QueueFilters.from_query(
        request.GET if request.method == "GET" else request.POST
    )
    focus = request.GET.get("focus") or next(
        (v.verdict.key for v in view.verdicts if v.verdict.human is None), None
    )
    return {
        "rubric": rubric,
        "run": run,
        "v": view,
        "newer": newer,
        "older": older,
        "query": filters.to_query(),
        "qs": urlencode(filters.to_query()),
        "focus": focus,
        "claim_ok": extra.pop("claim_ok", True),
        "errors": extra.pop("errors", {}),
        # Suggested edits beside each criterion; their forms come back to this page.
        **suggestions_context(rubric, review_url(rubric, run.pk, filters.to_query())),
        **extra,
    }


@never_cache
@team_required
@require_GET
def review(request: HttpRequest, rubric_id: Any, run_id: Any) -> HttpResponse:
    rubric = rubric_or_404(request, rubric_id)
    run = run_or_404(request, run_id)
    claim_ok = True
    if request.membership.can_edit:  # type: ignore[attr-defined]
        claim_ok = services.claim_take(run=run, rubric=rubric, user=request.user)
    return render(
        request, "reviews/review.html", _review_context(request, rubric, run, claim_ok=claim_ok)
    )


def _after_change(
    request: HttpRequest, rubric: Rubric, run: AgentRun, key: str = ""
) -> HttpResponse:
    query = selectors.QueueFilters.from_query(request.POST).to_query()
    view = selectors.run_review_get(run=run, rubric_id=rubric.pk, history=False)
    keys = [v.verdict.key for v in view.verdicts]
    # Move the keyboard focus on to the next criterion still unlabelled, else stay.
    later = keys[keys.index(key) + 1 :] + keys if key in keys else keys
    nxt = next(
        (
            k
            for k in later
            if next(v for v in view.verdicts if v.verdict.key == k).verdict.human is None
        ),
        key,
    )
    if nxt:
        query["focus"] = nxt
    return redirect(review_url(rubric, run.pk, query))


def _invalid(
    request: HttpRequest, rubric: Rubric, run: AgentRun, errors: dict[str, Any]
) -> HttpResponse:
    """The review page with the refused form's errors, showing what was typed in it (the
    score and note) rather than the stored values."""
    posted = {
        field: {"score": request.POST.get("score", ""), "note": request.POST.get("note", "")}
        for field in errors
    }
    context = _review_context(request, rubric, run, errors=errors, posted=posted)
    return render(request, "reviews/review.html", context, status=422)


@never_cache
@editor_required
@require_POST
def review_verdict(request: HttpRequest, rubric_id: Any, run_id: Any) -> HttpResponse:
    """Agree or disagree with the judge on one criterion (``a`` / ``d`` on the keyboard)."""
    rubric = rubric_or_404(request, rubric_id)
    run = run_or_404(request, run_id)
    key = request.POST.get("criterion", "")
    satisfied = request.POST.get("satisfied")
    if satisfied not in ("true", "false"):
        return _invalid(request, rubric, run, {key: {"satisfied": "choose agree or disagree"}})
    try:
        services.override_create(
            run=run,
            criterion_key=key,
            satisfied=satisfied == "true",
            note=request.POST.get("note", ""),
            reviewer=Reviewer(user=request.user),
            rubric_id=rubric.pk,
        )
    except ReviewValidationError as exc:
        return _invalid(request, rubric, run, {key: exc.errors})
    except ReviewConflict as exc:
        messages.error(request, page_message(exc))
    return _after_change(request, rubric, run, key)


@never_cache
@editor_required
@require_POST
def review_alignment(request: HttpRequest, rubric_id: Any, run_id: Any) -> HttpResponse:
    rubric = rubric_or_404(request, rubric_id)
    run = run_or_404(request, run_id)
    perspective, dimension = request.POST.get("perspective", ""), request.POST.get("dimension", "")
    field = f"{perspective}-{dimension}"
    try:
        score = float(request.POST.get("score", ""))
    except ValueError:
        return _invalid(request, rubric, run, {field: {"score": "a number between 0 and 1"}})
    try:
        services.alignment_override_create(
            run=run,
            perspective=perspective,
            dimension=dimension,
            score=score,
            note=request.POST.get("note", ""),
            reviewer=Reviewer(user=request.user),
        )
    except ReviewValidationError as exc:
        return _invalid(request, rubric, run, {field: exc.errors})
    except ReviewConflict as exc:
        messages.error(request, page_message(exc))
    return _after_change(request, rubric, run)


@editor_required
@require_POST
def review_revert(request: HttpRequest, rubric_id: Any, run_id: Any) -> HttpResponse:
    rubric = rubric_or_404(request, rubric_id)
    run = run_or_404(request, run_id)
    change_id = request.POST.get("change", "")
    alignment = request.POST.get("kind") == "alignment"
    get = selectors.alignment_override_get if alignment else selectors.verdict_override_get
    row = get(team=request.team, override_id=_uuid(change_id))  # type: ignore[attr-defined]
    if row is None or row.run_id != run.pk:
        raise Http404("No such change on this run")
    revert = services.alignment_override_revert if alignment else services.override_revert
    try:
        revert(row=row, reviewer=Reviewer(user=request.user))  # type: ignore[arg-type]
        messages.success(request, "Change reverted.")
    except ReviewConflict as exc:
        messages.error(request, page_message(exc))
    return _after_change(request, rubric, run)


@editor_required
@require_POST
def review_golden(request: HttpRequest, rubric_id: Any, run_id: Any) -> HttpResponse:
    rubric = rubric_or_404(request, rubric_id)
    run = run_or_404(request, run_id)
    try:
        services.golden_set_mark(
            run=run, rubric_id=rubric.pk, golden=request.POST.get("golden") == "true"
        )
    except ReviewConflict as exc:
        messages.error(request, page_message(exc))
    return _after_change(request, rubric, run)


# --- Teach the judge: a reviewed verdict becomes a graded example (rubrics.examples) ----------


@never_cache
@editor_required
@require_POST
def review_example(request: HttpRequest, rubric_id: Any, run_id: Any) -> HttpResponse:
    """Add the label in effect on one criterion, with an excerpt of the run and the reason, as
    an example of that criterion in the rubric's draft (422 naming the field when it cannot)."""
    rubric = rubric_or_404(request, rubric_id)
    run = run_or_404(request, run_id)
    key = request.POST.get("criterion", "")
    posted = {name: request.POST.get(name, "") for name in ("criterion", "excerpt", "reason")}
    bad = {name: "must not contain NUL characters" for name, v in posted.items() if "\x00" in v}
    if bad or len(key) > 32:  # a criterion key is at most 32 characters
        problems = bad or {"criterion": "no such criterion"}
        return _invalid(request, rubric, run, {"example-": problems})
    label = label_in_effect(run=run, rubric=rubric, criterion_key=key)
    if label is None:
        return _invalid(request, rubric, run, {f"example-{key}": {"criterion": UNLABELLED}})
    try:
        example_add(
            rubric=rubric,
            criterion_key=key,
            excerpt=request.POST.get("excerpt", ""),
            satisfied=label.satisfied,
            reason=request.POST.get("reason", ""),
            run_id=run.pk,
            user=request.user,
        )
    except RubricValidationError as exc:
        return _invalid(request, rubric, run, {f"example-{key}": exc.errors})
    messages.success(
        request,
        f"Added as an example of {key}: the rubric's next saved version takes it (save a "
        "version in the editor).",
    )
    return _after_change(request, rubric, run, key)
