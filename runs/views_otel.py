"""Team settings for OpenTelemetry ingest: the default rubric per ``service.name`` (the same
rule as PUT /api/otel/services), and the newest rejections (GET /api/otel/rejections). Everyone
in the team reads it; owners change it."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from teams.access import TeamRequest, owner_required, team_required

from .otel.rejections import otel_rejections_list
from .otel.services import (
    ServiceRubricError,
    otel_rubric_choices,
    otel_service_set,
    otel_services_list,
)

# The page lists this many of the newest rejections; the API pages through all those kept.
PAGE_REJECTIONS = 50


class ServiceRubricForm(forms.Form):
    service_name = forms.CharField(
        max_length=200, label="Service name", help_text="The resource attribute service.name"
    )
    rubric = forms.CharField(
        max_length=200,
        label="Rubric",
        help_text="Its slug or id",
        widget=forms.TextInput(attrs={"list": "otel-rubrics"}),
    )


def _page(request: TeamRequest, form: ServiceRubricForm, status: int = 200) -> HttpResponse:
    context = {
        "rows": otel_services_list(team=request.team),
        "form": form,
        "choices": otel_rubric_choices(team=request.team),
        "is_owner": request.membership.role == "owner",
        "rejections": otel_rejections_list(team=request.team, limit=PAGE_REJECTIONS),
    }
    return render(request, "runs/otel_services.html", context, status=status)


@never_cache
@team_required
@require_GET
def otel_services(request: TeamRequest) -> HttpResponse:
    return _page(request, ServiceRubricForm())


@never_cache
@owner_required
@require_POST
def otel_service_save(request: TeamRequest) -> HttpResponse:
    form = ServiceRubricForm(request.POST)
    if not form.is_valid():
        return _page(request, form, status=422)
    try:
        otel_service_set(team=request.team, **form.cleaned_data)
    except ServiceRubricError as exc:
        for field, message in exc.errors.items():
            form.add_error(field if field in form.fields else None, message)
        return _page(request, form, status=422)
    messages.success(request, f"Runs of “{form.cleaned_data['service_name']}” use that rubric.")
    return redirect("otel_services")


@owner_required
@require_POST
def otel_service_remove(request: TeamRequest) -> HttpResponse:
    name = (request.POST.get("service_name") or "").strip()
    if name:
        otel_service_set(team=request.team, service_name=name, rubric=None)
        messages.success(request, f"“{name}” has no default rubric now.")
    return redirect("otel_services")
