"""Review pages: the queue per rubric, reviewing one run, agreement, golden set, consistency.

Every form is a plain POST that redirects back (the keyboard shortcuts in static/js/reviews.js
only press these buttons), so the pages work without JavaScript.
"""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from evalsite.errors import page_message
from rubrics.examples import example_add
from rubrics.models import Rubric, RubricVersion
from rubrics.services import RubricValidationError
from runs.models import AgentRun
from teams.access import editor_required, team_object_or_404, team_required

from . import selectors, services
from .api import export_response
from .selectors.examples import label_in_effect
from .services import ReviewConflict, Reviewer, ReviewValidationError

UNLABELLED = "review this criterion first: an example teaches the reviewers' verdict"


def _rubric_or_404(request: HttpRequest, rubric_id: Any) -> Rubric:
    return team_object_or_404(
        request, Rubric.objects.select_related("current_version"), id=rubric_id
    )


def _run(request: HttpRequest, run_id: Any) -> AgentRun:
    return team_object_or_404(request, AgentRun.objects.select_related("rubric"), id=run_id)


def _flagged_keys(rubric: Rubric) -> list[str]:
    report = selectors.rubric_agreement(rubric=rubric, version=rubric.current_version)
    return [c.criterion_id for c in report.flagged]


def _review_url(rubric: Rubric, run_id: Any, query: dict[str, str] | None = None) -> str:
    url = reverse("reviews:review", args=[rubric.pk, run_id])
    return f"{url}?{urlencode(query)}" if query else url


def _uuid(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError as exc:
        raise Http404("No such change") from exc


def _uuid_or_none(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except ValueError:
        return None


def _int(value: Any, default: int | None = None) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


# --- Queue ------------------------------------------------------------------------------------


@never_cache
@team_required
@require_GET
def queue(request: HttpRequest, rubric_id: Any) -> HttpResponse:
    rubric = _rubric_or_404(request, rubric_id)
    filters = selectors.QueueFilters.from_query(request.GET)
    flagged = _flagged_keys(rubric)
    page = selectors.review_queue(
        rubric=rubric,
        filters=filters,
        page=_int(request.GET.get("page"), 1) or 1,
        flagged_keys=flagged,
    )
    query = filters.to_query()
    context = {
        "rubric": rubric,
        "page": page,
        "filters": filters,
        "flagged": flagged,
        "query": query,
        "qs": urlencode(query),
    }
    return render(request, "reviews/queue.html", context)


@editor_required
@require_POST
def queue_next(request: HttpRequest, rubric_id: Any) -> HttpResponse:
    """Claim the next unreviewed run nobody else holds and open it (the keyboard's ``n``)."""
    rubric = _rubric_or_404(request, rubric_id)
    filters = selectors.QueueFilters.from_query(request.POST)
    run = services.claim_next(
        rubric=rubric,
        user=request.user,
        filters=filters,
        skip=_uuid_or_none(request.POST.get("skip", "")),
        flagged_keys=_flagged_keys(rubric) if filters.poor_agreement else None,
    )
    if run is None:
        messages.success(request, "Nothing left to review in this queue. Well done!")
        return redirect(
            f"{reverse('reviews:queue', args=[rubric.pk])}?{urlencode(filters.to_query())}"
        )
    return redirect(_review_url(rubric, run.pk, filters.to_query()))


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
        **extra,
    }


@never_cache
@team_required
@require_GET
def review(request: HttpRequest, rubric_id: Any, run_id: Any) -> HttpResponse:
    rubric = _rubric_or_404(request, rubric_id)
    run = _run(request, run_id)
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
    return redirect(_review_url(rubric, run.pk, query))


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
    rubric = _rubric_or_404(request, rubric_id)
    run = _run(request, run_id)
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
    rubric = _rubric_or_404(request, rubric_id)
    run = _run(request, run_id)
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
    rubric = _rubric_or_404(request, rubric_id)
    run = _run(request, run_id)
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
    rubric = _rubric_or_404(request, rubric_id)
    run = _run(request, run_id)
    try:
        services.golden_set_mark(
            run=run, rubric_id=rubric.pk, golden=request.POST.get("golden") == "true"
        )
    except ReviewConflict as exc:
        messages.error(request, page_message(exc))
    return _after_change(request, rubric, run)


# --- Agreement and export ---------------------------------------------------------------------


def _version(request: HttpRequest, rubric: Rubric) -> RubricVersion | None:
    number = _int(request.GET.get("version"))
    version = selectors.version_pick(rubric=rubric, number=number)
    if number is not None and version is None:
        raise Http404("No such version")
    return version


@team_required
@require_GET
def agreement(request: HttpRequest, rubric_id: Any) -> HttpResponse:
    rubric = _rubric_or_404(request, rubric_id)
    report = selectors.rubric_agreement(rubric=rubric, version=_version(request, rubric))
    reviewers = selectors.reviewer_agreement(report=report)
    versions = list(
        RubricVersion.objects.filter(rubric=rubric)
        .order_by("-number")
        .values_list("number", flat=True)
    )
    return render(
        request,
        "reviews/agreement.html",
        {"rubric": rubric, "report": report, "reviewers": reviewers, "versions": versions},
    )


@team_required
@require_GET
def export(request: HttpRequest, rubric_id: Any, fmt: str) -> HttpResponse:
    if fmt not in ("csv", "jsonl"):
        raise Http404("Unknown format")
    return export_response(_rubric_or_404(request, rubric_id), fmt)  # type: ignore[return-value]  # streamed


# --- Calibration ------------------------------------------------------------------------------


def _golden_page(
    request: HttpRequest, rubric: Rubric, errors: dict[str, str] | None = None
) -> HttpResponse:
    context = {
        "rubric": rubric,
        "golden": selectors.golden_set(rubric=rubric),
        "calibrations": selectors.calibrations_list(rubric=rubric, kind="golden"),
        "candidate": request.POST.get("criteria", "") if errors else _candidate_text(rubric),
        "errors": errors or {},
    }
    return render(request, "reviews/golden.html", context, status=422 if errors else 200)


def _candidate_text(rubric: Rubric) -> str:
    """The current criteria, each line led by its key so a reworded line keeps it."""
    if rubric.current_version is None:
        return ""
    rows = rubric.current_version.criteria.order_by("position")
    return "\n".join(
        f"[{c.key}] {'' if c.required else '[optional] '}{c.description}" for c in rows
    )


@never_cache
@team_required
@require_GET
def golden(request: HttpRequest, rubric_id: Any) -> HttpResponse:
    return _golden_page(request, _rubric_or_404(request, rubric_id))


@never_cache
@editor_required
@require_POST
def golden_start(request: HttpRequest, rubric_id: Any) -> HttpResponse:
    """Score the golden set with the candidate criteria from the form."""
    rubric = _rubric_or_404(request, rubric_id)
    try:
        started = services.golden_run(
            rubric=rubric,
            user=request.user,
            criteria=request.POST.get("criteria") or None,
            judge_model=request.POST.get("judge", ""),
        )
    except ReviewValidationError as exc:
        return _golden_page(request, rubric, exc.errors)
    return redirect("reviews:calibration", started.pk)


def _consistency_page(
    request: HttpRequest, rubric: Rubric, errors: dict[str, str] | None = None
) -> HttpResponse:
    context = {
        "rubric": rubric,
        "calibrations": selectors.calibrations_list(rubric=rubric, kind="consistency"),
        "errors": errors or {},
        "form": request.POST if errors else {"sample": 20, "repeats": 3, "judge": ""},
    }
    return render(request, "reviews/consistency.html", context, status=422 if errors else 200)


@never_cache
@team_required
@require_GET
def consistency(request: HttpRequest, rubric_id: Any) -> HttpResponse:
    return _consistency_page(request, _rubric_or_404(request, rubric_id))


@never_cache
@editor_required
@require_POST
def consistency_start(request: HttpRequest, rubric_id: Any) -> HttpResponse:
    rubric = _rubric_or_404(request, rubric_id)
    try:
        started = services.consistency_check(
            rubric=rubric,
            user=request.user,
            sample=_int(request.POST.get("sample"), 0) or 0,
            repeats=_int(request.POST.get("repeats"), 0) or 0,
            judge_model=request.POST.get("judge", ""),
        )
    except ReviewValidationError as exc:
        return _consistency_page(request, rubric, exc.errors)
    return redirect("reviews:calibration", started.pk)


@team_required
@require_GET
def calibration(request: HttpRequest, calibration_id: Any) -> HttpResponse:
    found = selectors.calibration_get(team=request.team, calibration_id=calibration_id)  # type: ignore[attr-defined]
    if found is None:
        raise Http404("No such calibration")
    report = selectors.calibration_report(calibration=found)
    template = "reviews/calibration.html"
    if request.htmx:  # type: ignore[attr-defined]
        template += "#report"
    return render(request, template, {"c": found, "report": report, "rubric": found.rubric})


# --- Fragments for other pages (loaded by htmx, so those pages' query counts do not move) -------


@team_required
@require_GET
def run_panel(request: HttpRequest, run_id: Any) -> HttpResponse:
    run = _run(request, run_id)
    view = selectors.run_review_get(run=run, history=False)
    return render(request, "reviews/_run_panel.html", {"run": run, "v": view})


@team_required
@require_GET
def rubric_flags(request: HttpRequest, rubric_id: Any) -> HttpResponse:
    rubric = _rubric_or_404(request, rubric_id)
    report = selectors.rubric_agreement(rubric=rubric, version=rubric.current_version)
    return render(request, "reviews/_rubric_flags.html", {"rubric": rubric, "report": report})


# --- Teach the judge: a reviewed verdict becomes a graded example (rubrics.examples) ----------


@never_cache
@editor_required
@require_POST
def review_example(request: HttpRequest, rubric_id: Any, run_id: Any) -> HttpResponse:
    """Add the label in effect on one criterion, with an excerpt of the run and the reason, as
    an example of that criterion in the rubric's draft (422 naming the field when it cannot)."""
    rubric = _rubric_or_404(request, rubric_id)
    run = _run(request, run_id)
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
