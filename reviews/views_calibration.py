"""Calibration pages: scoring the golden set with candidate criteria, consistency checks (the
same runs judged several times), and a calibration's report.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from rubrics.models import Rubric
from teams.access import editor_required, team_required

from . import selectors, services
from .services import ReviewValidationError
from .views import int_or, rubric_or_404

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
    return _golden_page(request, rubric_or_404(request, rubric_id))


@never_cache
@editor_required
@require_POST
def golden_start(request: HttpRequest, rubric_id: Any) -> HttpResponse:
    """Score the golden set with the candidate criteria from the form."""
    rubric = rubric_or_404(request, rubric_id)
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
    return _consistency_page(request, rubric_or_404(request, rubric_id))


@never_cache
@editor_required
@require_POST
def consistency_start(request: HttpRequest, rubric_id: Any) -> HttpResponse:
    rubric = rubric_or_404(request, rubric_id)
    try:
        started = services.consistency_check(
            rubric=rubric,
            user=request.user,
            sample=int_or(request.POST.get("sample"), 0) or 0,
            repeats=int_or(request.POST.get("repeats"), 0) or 0,
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
