"""What every rubric page module shares: the rubric lookup and the redirect after a post."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.shortcuts import redirect
from django_htmx.http import HttpResponseClientRedirect

from teams.access import TeamRequest, team_object_or_404

from .models import Rubric


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
