"""What every rubric page module shares: the rubric lookup, the redirect after a post, numbers
from the query and the paste box's parsing (the New rubric page and the editor)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import HttpResponse
from django.shortcuts import redirect
from django_htmx.http import HttpResponseClientRedirect

from judge_engine.text import BLANK, count_criteria, criterion_too_long, parse_criteria, parse_lines
from teams.access import TeamRequest, team_object_or_404

from .models import Rubric
from .services import RubricValidationError, criteria_count_check


def redirect_after_post(request: TeamRequest, url: str) -> HttpResponse:
    """Post/redirect/get for forms; htmx requests are told to load the page themselves, so a
    redirect never lands inside a swapped fragment."""
    if request.htmx:
        return HttpResponseClientRedirect(url)
    return redirect(url)


def rubric_or_404(request: TeamRequest, rubric_id: Any) -> Rubric:
    return team_object_or_404(
        request, Rubric.objects.select_related("current_version", "judge_connection"), id=rubric_id
    )


def int_param(value: Any, default: int) -> int:
    """A version number from the query; ``default`` for anything else (text, absurd sizes)."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        return default
    return number if 0 <= number < 2**31 else default


def paste_lines(form: forms.Form, field: str, parsed: list[Any] | None) -> dict[str, Any]:
    """What each pasted line became, for the preview: the lines that gave a criterion (as
    written, and the criterion) and the other non-blank ones with why they gave none. Only
    for text within the cap (``parsed`` is not None)."""
    if parsed is None or not hasattr(form, "cleaned_data"):
        return {"criteria": [], "skipped": [], "too_long": []}
    lines = parse_lines(form.cleaned_data.get(field) or "")
    criteria = [line for line in lines if line.description is not None]
    too_long = [
        problem
        for position, line in enumerate(criteria, start=1)
        if (
            problem := criterion_too_long(
                line.description or "", position=position, line=line.number
            )
        )
    ]
    return {
        "criteria": criteria,
        "skipped": [line for line in lines if line.skipped not in (None, BLANK)],
        "too_long": too_long,
    }


def parsed_paste(form: forms.Form, field: str) -> list[Any] | None:
    """The criteria parsed from a paste box (the parser is linear and the field's length is
    capped), or None with the error on ``field`` when there are more than a version may hold."""
    text = form.cleaned_data.get(field) or ""
    if not within_cap(form, field, count_criteria(text)):
        return None
    return parse_criteria(text) if text.strip() else []


def within_cap(form: forms.Form, field: str, count: int) -> bool:
    try:
        criteria_count_check(count)
    except RubricValidationError as exc:
        form.add_error(field, exc.errors["criteria"])
        return False
    return True
