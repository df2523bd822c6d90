"""Run pages that delete or take data away: deleting a run, and the runs list's export."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_POST

from evalsite.errors import page_message
from runs import selectors
from runs.selectors import RunFilterError, RunFilters
from teams.access import TeamRequest, bad_request, editor_required, team_required
from teams.models import Role

from .exports import runs_export_response
from .services.retention import RunProtected, run_delete


@editor_required
@require_POST
def run_delete_view(request: TeamRequest, run_id: Any) -> HttpResponse:
    """Delete the run (editors); a protected run needs an owner who ticks "delete anyway"."""
    run = selectors.run_get(team=request.team, run_id=run_id)
    if run is None:
        raise Http404("No such run")
    owner = request.membership.role == Role.OWNER
    try:
        run_delete(run=run, force=request.POST.get("force") == "1", may_force=owner)
    except RunProtected as exc:
        messages.error(request, page_message(exc))
        return redirect("run_detail", run_id=run.pk)
    messages.success(request, f"Run {run} deleted with its evaluations and labels.")
    return redirect("run_list")


@team_required
@require_GET
def runs_export(request: TeamRequest, fmt: str) -> HttpResponse:
    """The runs the list shows for these filters, as CSV or JSON lines (streamed)."""
    if fmt not in ("csv", "jsonl"):
        raise Http404("Unknown format")
    try:
        filters = RunFilters.from_query(request.GET)
    except RunFilterError as exc:
        return bad_request(request, page_message(exc))
    response = runs_export_response(team=request.team, filters=filters, fmt=fmt)
    return response  # type: ignore[return-value]  # streamed
