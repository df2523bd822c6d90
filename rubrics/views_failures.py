"""The failed-criteria review: each criterion's failure rate per rubric version, and the walk
through the runs failing one criterion. One template per page; htmx requests get a named
partial."""

from __future__ import annotations

import uuid
from typing import Any

from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from runs.selectors import rubric_stats, trends
from teams.access import TeamRequest, team_required

from .models import Criterion, Rubric, RubricVersion
from .views_common import int_param, rubric_or_404


def _version_for(request: TeamRequest, rubric: Rubric) -> RubricVersion | None:
    number = int_param(request.GET.get("version"), 0)
    if number:
        version = RubricVersion.objects.filter(rubric=rubric, number=number).first()
        if version is None:
            raise Http404("No such version")
        return version
    return rubric.current_version


def _version_context(request: TeamRequest, rubric: Rubric) -> dict[str, Any]:
    """The version to show and what to say about it. Without ?version: the newest version with
    judged runs (else the current one), and which newer versions have none yet. A version with
    no judged runs offers a re-score with it and the versions that have some."""
    versions = list(RubricVersion.objects.filter(rubric=rubric).order_by("-number"))
    judged = rubric_stats.versions_judged(rubric=rubric)
    newer: list[int] = []
    if request.GET.get("version"):
        version = _version_for(request, rubric)
    else:
        version = next((v for v in versions if v.id in judged), None)
        if version is None:
            version = rubric.current_version
        else:
            newer = [v.number for v in versions if v.number > version.number]
    return {
        "version": version,
        "versions": versions,
        "rows": rubric_stats.rubric_failure_rates(rubric=rubric, version=version)
        if version
        else [],
        "newer_unjudged": sorted(newer),
        "version_judged": judged.get(version.id, 0) if version else 0,
        "judged_versions": [(v, judged[v.id]) for v in versions if v.id in judged],
        **trends.chart_data(trends.rubric_trend(rubric=rubric)),
    }


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
        rubric = rubric_or_404(request, chosen)
    rubric = rubric or next((r for r in rubrics if r.current_version_id), None)
    context: dict[str, Any] = {
        "rubrics": rubrics,
        "rubric": rubric,
        "rows": [],
        "version": None,
        "filter_error": filter_error,
    }
    if rubric is not None:
        context.update(_version_context(request, rubric))
    template = "rubrics/failures.html"
    if request.htmx and request.GET.get("partial") == "table":
        template += "#failure-table"
    return render(request, template, context)


@team_required
@require_GET
def failures_walk(request: TeamRequest, rubric_id: Any, key: str) -> HttpResponse:
    """Walk the runs failing one criterion, newest first; j/k or the links move."""
    rubric = rubric_or_404(request, rubric_id)
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
