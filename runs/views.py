"""Run pages: home, the runs list (filters, keyset pages, live status), run detail, and the
re-score buttons with their batch progress. One template per page; htmx gets partials."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from evalsite.errors import page_message
from evalsite.pagination import InvalidCursor
from judging.services.budget import budget_usage
from judging.services.rescore import (
    RescoreScope,
    RescoreValidationError,
    TooManyBatches,
    batch_cancel,
    batch_create,
    batch_estimate,
)
from judging.services.rescore_estimate import estimate_needs_confirmation
from reviews.services.retention import REASONS, run_protection
from rubrics.models import Criterion, Rubric, RubricVersion
from teams.access import TeamRequest, editor_required, team_object_or_404, team_required

from . import selectors
from .forms import RescoreForm, RunFilterForm
from .models import FINAL_STATUSES, AgentRun, RescoreBatch
from .selectors import RunFilterError, RunFilters

PAGE_SIZE = 50


@team_required
@require_GET
def home(request: TeamRequest) -> HttpResponse:
    o = selectors.home_overview(team=request.team)
    usage = [o.usage.get(day, {}) for day in o.days]
    first_steps = selectors.first_steps(team=request.team)
    calls = sum(u.get("calls") or 0 for u in usage)
    context = {
        "o": o,
        "token_series": [u.get("tokens") or 0 for u in usage],
        "cost_series": [u.get("cost") or 0 for u in usage],
        "usage_tokens": sum(u.get("tokens") or 0 for u in usage),
        "usage_calls": calls,
        "no_calls": _no_calls(calls, new_team=first_steps is not None),
        # None (shown as "—") when litellm priced none of the calls, rather than a false $0.
        "usage_cost": _sum_known(u.get("cost") for u in usage),
        "status_total": sum(n for _, n in o.statuses),
        "status_max": max((n for _, n in o.statuses), default=0),
        "band_max": max((n for _, n in o.bands), default=0),
        "failed_total": o.judged_total - o.passed_total,
        "budget_periods": budget_usage(team=request.team),
        "first_steps": first_steps,
        "site_url": request.build_absolute_uri("/").rstrip("/"),
    }
    return render(request, "runs/home.html", context)


def _no_calls(calls: int, *, new_team: bool) -> str:
    """What the cost card and charts say without any judge call (then no cost is missing for
    want of a price); empty when there were calls."""
    if calls:
        return ""
    return "No judge calls yet." if new_team else "No judge calls in this period."


def _sum_known(values: Any) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


# --- Runs list -----------------------------------------------------------------------------------


def _filter_choices(team: Any, filters: RunFilters | None) -> dict[str, Any]:
    """Rubrics, and for the chosen rubric its versions and the criteria of the chosen (else
    current) version, and the tools the team's recent runs called: what the filter selects
    offer. At most four queries."""
    rubrics = list(
        Rubric.objects.filter(team=team).select_related("current_version").order_by("name")
    )
    rubric = None
    if filters and filters.rubric:
        rubric = next((r for r in rubrics if filters.rubric in (str(r.id), r.slug)), None)
    versions: list[int] = []
    criteria: list[Criterion] = []
    if rubric is not None:
        versions = list(
            RubricVersion.objects.filter(rubric=rubric)
            .order_by("-number")
            .values_list("number", flat=True)
        )
        number = filters.version if filters and filters.version else None
        version_q = (
            {"version__number": number} if number else {"version_id": rubric.current_version_id}
        )
        criteria = list(
            Criterion.objects.filter(version__rubric=rubric, **version_q).order_by("position")
        )
    return {
        "rubrics": rubrics,
        "chosen_rubric": rubric,
        "versions": versions,
        "criteria": criteria,
        "tools": selectors.tools_recent(team=team),
    }


@team_required
@require_GET
def run_list(request: TeamRequest) -> HttpResponse:
    team = request.team
    form = RunFilterForm(request.GET)
    errors: dict[str, str] = {}
    filters: RunFilters | None = None
    page = None
    try:
        filters = RunFilters.from_query(request.GET)
        page = selectors.runs_list(
            team=team,
            filters=filters,
            cursor=request.GET.get("cursor") or None,
            limit=PAGE_SIZE,
            sort=form.sort_order(),
        )
    except RunFilterError as exc:
        errors = exc.errors
    except InvalidCursor:
        errors = {"cursor": "This page link is out of date: start again from the first page."}
    context = {
        "form": form,
        "filter_errors": errors,
        "page": page,
        "runs": page.items if page else [],
        "filters_active": bool(filters and filters.to_query()),
        **_filter_choices(team, filters),
    }
    template = "runs/run_list.html"
    if request.htmx and request.htmx.target == "runs-region":
        template += "#runs-region"
    return render(request, template, context)


@team_required
@require_GET
def run_status(request: TeamRequest, run_id: Any) -> HttpResponse:
    """The live result cell. While the run is queued or running the cell polls itself; the
    final cell comes back without the trigger, which ends the polling."""
    run = selectors.run_status_cell(team=request.team, run_id=run_id)
    if run is None:
        raise Http404("No such run")
    return render(request, "runs/run_list.html#status-cell", {"run": run})


# --- Run detail ----------------------------------------------------------------------------------


@team_required
@require_GET
def run_detail(request: TeamRequest, run_id: Any) -> HttpResponse:
    detail = selectors.run_detail(
        team=request.team,
        run_id=run_id,
        evaluation_id=request.GET.get("evaluation"),
    )
    if detail is None:
        raise Http404("No such run")
    context = {
        "d": detail,
        "run": detail.run,
        "pending": detail.run.status not in FINAL_STATUSES,
        "protection": [REASONS[r] for r in run_protection(run=detail.run)],
    }
    return render(request, "runs/run_detail.html", context)


# --- Re-scoring ----------------------------------------------------------------------------------


def _safe_next(request: TeamRequest) -> str:
    """The posted ``next`` when it points at this site (never another host or a script)."""
    target = request.POST.get("next") or ""
    # A path on this site only: "x" would be taken for a URL name by redirect(), and anything
    # with a scheme or another host is refused by url_has_allowed_host_and_scheme.
    ok = target.startswith("/") and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return target if ok else ""


def _redirect_back(request: TeamRequest, fallback: str) -> HttpResponse:
    return redirect(_safe_next(request) or fallback)


def _rescore_targets(request: TeamRequest, form: RescoreForm) -> list[tuple[Rubric, RescoreScope]]:
    """(rubric, scope) per batch to create. Selected runs of several rubrics give one batch per
    rubric (a batch judges against one rubric version)."""
    data = form.cleaned_data
    scope_name = data["scope"]
    if scope_name == "rubric":  # every run of the rubric (on target_version, if given)
        return [(team_object_or_404(request, Rubric, id=data["rubric"]), RescoreScope())]
    if scope_name == "failing":
        rubric = team_object_or_404(request, Rubric, id=data["rubric"])
        # A criterion narrows to the runs failing it (even an optional one on a passed run).
        criterion = data.get("criterion") or None
        return [(rubric, RescoreScope(failed_only=criterion is None, criterion=criterion))]
    if scope_name == "run":
        run = team_object_or_404(request, AgentRun, id=data["run"])
        rubric = (
            team_object_or_404(request, Rubric, id=data["rubric"])
            if data.get("rubric")
            else run.rubric
        )
        return [(rubric, RescoreScope(runs=(run.pk,)))] if rubric else []
    return _selected_targets(request, data.get("rubric"))


def _selected_targets(request: TeamRequest, rubric_id: Any) -> list[tuple[Rubric, RescoreScope]]:
    ids = []
    for raw in request.POST.getlist("runs")[:MAX_SELECTED]:
        try:
            ids.append(uuid.UUID(raw))
        except ValueError:
            continue
    runs = AgentRun.objects.filter(team=request.team, pk__in=ids).select_related("rubric")
    if rubric_id:
        rubric = team_object_or_404(request, Rubric, id=rubric_id)
        return [(rubric, RescoreScope(runs=tuple(r.pk for r in runs)))] if runs else []
    groups: dict[Any, list[AgentRun]] = {}
    for run in runs:
        if run.rubric is not None:
            groups.setdefault(run.rubric, []).append(run)
    return [(rubric, RescoreScope(runs=tuple(r.pk for r in rs))) for rubric, rs in groups.items()]


MAX_SELECTED = 1000


@never_cache
@editor_required
@require_POST
def rescore_start(request: TeamRequest) -> HttpResponse:
    """The re-score buttons: one run, the selected runs, or every failing run of a rubric.
    Costly batches (estimate above the team's threshold) ask for confirmation first."""
    form = RescoreForm(request.POST)
    if not form.is_valid():
        messages.error(
            request,
            "Nothing to re-score: "
            + "; ".join(f"{k}: {' '.join(str(m) for m in v)}" for k, v in form.errors.items()),
        )
        return _redirect_back(request, reverse("run_list"))
    targets = _rescore_targets(request, form)
    if not targets:
        messages.error(request, "Nothing to re-score: pick runs that have a rubric.")
        return _redirect_back(request, reverse("run_list"))
    team = request.team
    v = form.cleaned_data.get("target_version")
    try:
        if not form.cleaned_data["confirm"]:
            force = form.cleaned_data["force"]  # a forced batch reuses nothing: estimate it so
            estimates = [
                (r, batch_estimate(team=team, rubric=r, scope=s, force=force, target_version=v))
                for r, s in targets
            ]
            if _needs_confirmation(team, [e for _, e in estimates]):
                context = {
                    "estimates": estimates,
                    "unknown_cost": any(e.cost is None for _, e in estimates),
                    "post": request.POST,
                    "back": _safe_next(request),
                }
                return render(request, "runs/rescore_confirm.html", context)
        batches = [
            batch_create(
                team=team,
                rubric=r,
                scope=s,
                target_version=v,
                force=form.cleaned_data["force"],
                user=request.user,
            )[0]
            for r, s in targets
        ]
    except RescoreValidationError as exc:
        messages.error(request, "Could not re-score: " + page_message(exc))
        return _redirect_back(request, reverse("run_list"))
    except TooManyBatches as exc:
        messages.error(request, f"Could not re-score: {page_message(exc)}.")
        return _redirect_back(request, reverse("batch_list"))
    return _after_rescore(request, form, batches)


def _needs_confirmation(team: Any, estimates: list[Any]) -> bool:
    return estimate_needs_confirmation(
        team=team, costs=[e.cost for e in estimates], tokens=sum(e.tokens for e in estimates)
    )


def _after_rescore(request: TeamRequest, form: RescoreForm, batches: list[Any]) -> HttpResponse:
    total = sum(b.total for b in batches)
    if form.cleaned_data["scope"] == "run":
        if total:
            messages.success(request, "Re-score queued: this page updates when the judge is done.")
        else:
            messages.info(request, "This run already has a re-score queued for that version.")
        return _redirect_back(request, reverse("run_detail", args=[form.cleaned_data["run"]]))
    if len(batches) == 1:
        return redirect("batch_detail", batch_id=batches[0].pk)
    messages.success(request, f"{len(batches)} re-score batches started ({total:,} runs).")
    return redirect("batch_list")


@team_required
@require_GET
def batch_detail(request: TeamRequest, batch_id: Any) -> HttpResponse:
    batch = selectors.batch_get(team=request.team, batch_id=batch_id)
    if batch is None:
        raise Http404("No such batch")
    context = {"p": selectors.batch_progress(batch=batch), "batch": batch}
    template = "runs/batch_detail.html"
    if request.htmx and request.htmx.target == "batch-progress":
        template += "#batch-progress"
    return render(request, template, context)


@team_required
@require_GET
def batch_list(request: TeamRequest) -> HttpResponse:
    team = request.team
    cursor_error = ""
    try:
        page = selectors.batches_list(team=team, cursor=request.GET.get("cursor") or None, limit=25)
    except InvalidCursor:
        # As on the runs list: a page link that is not ours shows the first page and says so.
        cursor_error = "This page link is out of date: showing the first page."
        page = selectors.batches_list(team=team, limit=25)
    progress = selectors.batches_progress(batches=page.items)
    rows = [progress[b.pk] for b in page.items]
    context = {"rows": rows, "page": page, "cursor_error": cursor_error}
    return render(request, "runs/batch_list.html", context)


@editor_required
@require_POST
def batch_cancel_view(request: TeamRequest, batch_id: Any) -> HttpResponse:
    batch = team_object_or_404(request, RescoreBatch, id=batch_id)
    batch_cancel(batch=batch)
    messages.info(request, "Batch cancelled: queued work was dropped, running work finishes.")
    return redirect("batch_detail", batch_id=batch.pk)
