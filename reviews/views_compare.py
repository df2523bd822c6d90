"""Comparison and publishing-gate pages (URLs under /reviews/, reviews.urls): the comparison report, "compare your edits with the
current version" from the rubric editor, the editor's gate panel (gate settings, draft versions
and their gate checks, publish / publish anyway), and the editor's save when a gate is set."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from evalsite.errors import AppError, page_message
from judging.services.rescore_estimate import estimate_needs_confirmation
from reviews.selectors.compare import FLIPS_SHOWN, comparison_report
from reviews.services.compare import MAX_LATEST, SampleIn, SideIn, comparison_start
from reviews.services.gate import GATE_FIELDS, gate_set, publish_request
from rubrics.drafts import draft_create
from rubrics.forms import CriteriaFormSet, DraftViewForm, draft_criteria, draft_rows_from_formset
from rubrics.models import Rubric, RubricVersion
from rubrics.working_copy import working_copy_discard
from teams.access import editor_required, team_object_or_404, team_required
from teams.models import Role

from .api_compare import export_response
from .models import Comparison, ComparisonPurpose, GateState
from .services.comparisons import comparison_get


def _rubric(request: HttpRequest, rubric_id: Any) -> Rubric:
    return team_object_or_404(
        request, Rubric.objects.select_related("current_version"), id=rubric_id
    )


def _redirect(request: HttpRequest, url: str) -> HttpResponse:
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)  # type: ignore[attr-defined]


def _editor_url(rubric: Rubric) -> str:
    return reverse("rubric_detail", args=[rubric.id]) + "#compare-gate"


@team_required
@require_GET
def comparison(request: HttpRequest, comparison_id: Any) -> HttpResponse:
    found = comparison_get(team=request.team, comparison_id=comparison_id)  # type: ignore[attr-defined]
    if found is None:
        raise Http404("No such comparison")
    report = comparison_report(comparison=found)
    template = "reviews/comparison.html"
    if request.htmx:  # type: ignore[attr-defined]
        template += "#report"
    context = {"c": found, "report": report, "rubric": found.rubric, "shown": FLIPS_SHOWN}
    return render(request, template, context)


@team_required
@require_GET
def comparison_export(request: HttpRequest, comparison_id: Any, fmt: str) -> HttpResponse:
    found = comparison_get(team=request.team, comparison_id=comparison_id)  # type: ignore[attr-defined]
    if found is None or fmt not in ("csv", "jsonl"):
        raise Http404("No such export")
    return export_response(comparison_report(comparison=found), fmt)


def _posted_draft(request: HttpRequest, rubric: Rubric) -> dict[str, Any] | None:
    """The editor's draft as posted (criteria rows and what the judge sees), or None."""
    formset = CriteriaFormSet(request.POST, prefix="c")
    view_form = DraftViewForm.posted(request.POST, rubric.current_version)
    if not formset.is_valid() or not view_form.is_valid():
        return None
    criteria, _ = draft_criteria(draft_rows_from_formset(formset))
    return {"criteria": criteria, **view_form.cleaned_data}


def _sample_size(value: Any) -> int | None:
    try:
        n = int(value)
    except (TypeError, ValueError):
        return None
    return n if 1 <= n <= MAX_LATEST else None


@editor_required
@require_POST
def compare_start(request: HttpRequest, rubric_id: Any) -> HttpResponse:
    """The editor's "compare your edits with vN on N recent runs": the posted unsaved edits
    are stored as a draft version and judged next to the current version on the newest N runs.
    Saving the same edits then makes that draft version the current one, under its number
    (rubrics.versioning.matching_draft), so comparing leaves no stray version behind."""
    rubric = _rubric(request, rubric_id)
    draft = _posted_draft(request, rubric)
    n = _sample_size(request.POST.get("compare_n"))
    if draft is None or n is None:
        problem = "your edits have errors" if draft is None else f"runs: 1 to {MAX_LATEST:,}"
        messages.error(request, f"Could not compare: {problem}.")
        return _redirect(request, _editor_url(rubric))
    team = request.team  # type: ignore[attr-defined]
    a, b, sample = SideIn(), SideIn(draft=draft), SampleIn(kind="latest", n=n)
    try:
        if request.POST.get("confirm") != "on":
            # Like a re-score: above the team's threshold, the estimate is confirmed first.
            _, estimate, _ = comparison_start(
                team=team, rubric=rubric, a=a, b=b, sample=sample, dry_run=True, user=request.user
            )
            total = estimate["total"]
            if estimate_needs_confirmation(
                team=team, costs=[total.get("cost")], tokens=total.get("tokens", 0)
            ):
                context = {"rubric": rubric, "estimate": estimate, "post": request.POST, "n": n}
                partial = bool(getattr(request, "htmx", False))
                template = f"reviews/{'_' if partial else ''}compare_confirm.html"
                return render(request, template, context)
        started, _, _ = comparison_start(
            team=team, rubric=rubric, a=a, b=b, sample=sample, user=request.user
        )
    except AppError as exc:
        messages.error(request, f"Could not compare: {page_message(exc)}")
        return _redirect(request, _editor_url(rubric))
    assert started is not None
    return _redirect(request, reverse("reviews:comparison", args=[started.pk]))


def gated_save(request: HttpRequest, rubric: Rubric, draft: dict[str, Any]) -> HttpResponse:
    """The editor's save when the rubric has a gate: the draft is saved and its gate check
    starts; it is published when the check passes (the panel shows "checking the gate…")."""
    try:
        version, _ = draft_create(rubric=rubric, user=request.user, **draft)
        outcome = publish_request(
            team=request.team, rubric=rubric, version=version, user=request.user,  # type: ignore[attr-defined]
            actor_name=request.user.get_username(),
        )  # fmt: skip
    except AppError as exc:
        messages.error(request, f"Not saved: {page_message(exc)}")
        return _redirect(request, _editor_url(rubric))
    working_copy_discard(rubric=rubric, user=request.user)  # the edits are a version now
    if outcome.state == "published":
        messages.success(request, f"Saved and published as version {version.number}.")
    else:
        messages.info(
            request,
            f"Saved as draft version {version.number}: checking the publishing gate… It is "
            "published as soon as it passes.",
        )
    return _redirect(request, _editor_url(rubric))


# --- The editor's gate panel --------------------------------------------------------------------


def _panel_context(request: HttpRequest, rubric: Rubric, **extra: Any) -> dict[str, Any]:
    versions = RubricVersion.objects.filter(rubric=rubric)
    drafts = list(versions.filter(published=False).order_by("-number")[:5])
    checks: dict[Any, Comparison] = {}
    for check in Comparison.objects.filter(
        rubric=rubric, purpose=ComparisonPurpose.GATE, version_b__in=drafts
    ).order_by("created_at"):
        checks[check.version_b_id] = check  # the newest per draft
    is_owner = getattr(request, "membership", None) is not None and (
        request.membership.role == Role.OWNER  # type: ignore[attr-defined]
    )
    return {
        "rubric": rubric,
        "gate": rubric.gate or {},
        "gate_fields": GATE_FIELDS,
        "drafts": [(d, checks.get(d.pk)) for d in drafts],
        "checking": any(c.gate_state == GateState.CHECKING for c in checks.values()),
        "recent": Comparison.objects.filter(rubric=rubric).select_related("version_a", "version_b")[
            :5
        ],
        "gate_notes": versions.exclude(gate_note="").order_by("-number")[:5],
        "is_owner": is_owner,
        "errors": {},
        **extra,
    }


@team_required
@require_GET
def compare_panel(request: HttpRequest, rubric_id: Any) -> HttpResponse:
    rubric = _rubric(request, rubric_id)
    return render(request, "reviews/_compare_panel.html", _panel_context(request, rubric))


def _bound(value: Any) -> Any:
    text = (value or "").strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return text  # refused by gate_set, naming the field


@editor_required
@require_POST
def gate_save(request: HttpRequest, rubric_id: Any) -> HttpResponse:
    rubric = _rubric(request, rubric_id)
    bounds = {name: _bound(request.POST.get(name)) for name in GATE_FIELDS}
    try:
        gate_set(rubric=rubric, **bounds)
    except AppError as exc:
        context = _panel_context(request, rubric, errors=getattr(exc, "errors", {}))
        context["posted"] = bounds
        return render(request, "reviews/_compare_panel.html", context, status=422)
    messages.success(
        request, "Publishing gate saved." if rubric.gate else "Publishing gate removed."
    )
    return _redirect(request, _editor_url(rubric))


@editor_required
@require_POST
def publish(request: HttpRequest, rubric_id: Any, number: int) -> HttpResponse:
    """Publish a draft (through the gate if one is set); an owner may give a reason to
    publish a draft that failed it."""
    rubric = _rubric(request, rubric_id)
    version = RubricVersion.objects.filter(rubric=rubric, number=number).first()
    if version is None:
        raise Http404("No such version")
    try:
        outcome = publish_request(
            team=request.team, rubric=rubric, version=version, user=request.user,  # type: ignore[attr-defined]
            actor_name=request.user.get_username(),
            override_reason=request.POST.get("override_reason", ""),
            is_owner=request.membership.role == Role.OWNER,  # type: ignore[attr-defined]
        )  # fmt: skip
    except AppError as exc:
        messages.error(request, f"Not published: {page_message(exc)}")
        return _redirect(request, _editor_url(rubric))
    if outcome.state == "published":
        messages.success(request, f"Version {version.number} published.")
    else:
        messages.info(request, f"Checking the publishing gate for draft version {version.number}…")
    return _redirect(request, _editor_url(rubric))
