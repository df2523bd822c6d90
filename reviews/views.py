"""Review pages: the queue per rubric, agreement and export, and the fragments other pages load;
the helpers every review page uses. Reviewing one run is in views_review.py, the golden set and
consistency checks in views_calibration.py.

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

from rubrics.models import Rubric, RubricVersion
from runs.models import AgentRun
from teams.access import editor_required, team_object_or_404, team_required

from . import selectors, services
from .api import export_response


def rubric_or_404(request: HttpRequest, rubric_id: Any) -> Rubric:
    return team_object_or_404(
        request, Rubric.objects.select_related("current_version"), id=rubric_id
    )


def run_or_404(request: HttpRequest, run_id: Any) -> AgentRun:
    return team_object_or_404(request, AgentRun.objects.select_related("rubric"), id=run_id)


def _flagged_keys(rubric: Rubric) -> list[str]:
    report = selectors.rubric_agreement(rubric=rubric, version=rubric.current_version)
    return [c.criterion_id for c in report.flagged]


def review_url(rubric: Rubric, run_id: Any, query: dict[str, str] | None = None) -> str:
    url = reverse("reviews:review", args=[rubric.pk, run_id])
    return f"{url}?{urlencode(query)}" if query else url


def _uuid_or_none(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except ValueError:
        return None


def int_or(value: Any, default: int | None = None) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


# --- Queue ------------------------------------------------------------------------------------


@never_cache
@team_required
@require_GET
def queue(request: HttpRequest, rubric_id: Any) -> HttpResponse:
    rubric = rubric_or_404(request, rubric_id)
    filters = selectors.QueueFilters.from_query(request.GET)
    flagged = _flagged_keys(rubric)
    page = selectors.review_queue(
        rubric=rubric,
        filters=filters,
        page=int_or(request.GET.get("page"), 1) or 1,
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
    rubric = rubric_or_404(request, rubric_id)
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
    return redirect(review_url(rubric, run.pk, filters.to_query()))


# --- Agreement and export ---------------------------------------------------------------------


def _version(request: HttpRequest, rubric: Rubric) -> RubricVersion | None:
    number = int_or(request.GET.get("version"))
    version = selectors.version_pick(rubric=rubric, number=number)
    if number is not None and version is None:
        raise Http404("No such version")
    return version


@team_required
@require_GET
def agreement(request: HttpRequest, rubric_id: Any) -> HttpResponse:
    rubric = rubric_or_404(request, rubric_id)
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
    return export_response(rubric_or_404(request, rubric_id), fmt)  # type: ignore[return-value]  # streamed


# --- Fragments for other pages (loaded by htmx, so those pages' query counts do not move) -------


@team_required
@require_GET
def run_panel(request: HttpRequest, run_id: Any) -> HttpResponse:
    run = run_or_404(request, run_id)
    view = selectors.run_review_get(run=run, history=False)
    return render(request, "reviews/_run_panel.html", {"run": run, "v": view})


@team_required
@require_GET
def rubric_flags(request: HttpRequest, rubric_id: Any) -> HttpResponse:
    rubric = rubric_or_404(request, rubric_id)
    report = selectors.rubric_agreement(rubric=rubric, version=rubric.current_version)
    return render(request, "reviews/_rubric_flags.html", {"rubric": rubric, "report": report})
