"""Team settings → Verdicts to your tracing: the OTLP export of verdicts (owners)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from .access import TeamRequest, owner_required
from .forms import EXPORT_PREFIX, OtelExportForm
from .otel_export import otel_export_remove, otel_export_set
from .services import TeamValidationError
from .views import settings_page


@never_cache
@owner_required
@require_POST
def otel_export_save(request: TeamRequest) -> HttpResponse:
    form = OtelExportForm(request.POST, prefix=EXPORT_PREFIX)
    if form.is_valid():
        try:
            otel_export_set(team=request.team, **form.export_fields())
        except TeamValidationError as exc:
            for field, message in exc.errors.items():
                name = field.split(".")[1] if field.count(".") else field
                form.add_error(name if name in form.fields else None, f"{field}: {message}")
        else:
            messages.success(request, "Verdicts will be sent to this endpoint.")
            return redirect("/team/#otel-export")
    return settings_page(request, export_form=form, status=422)


@never_cache
@owner_required
@require_POST
def otel_export_remove_view(request: TeamRequest) -> HttpResponse:
    if otel_export_remove(team=request.team):
        messages.success(request, "Verdicts are no longer exported; the saved headers are deleted.")
    return redirect("/team/#otel-export")
