"""Team pages: switching teams, and team settings (API keys, judge connections, re-score
confirmation cost)."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.cache import add_never_cache_headers
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from evalsite.errors import page_message
from judging.services.budget import BudgetValidationError, budget_for, budget_update, budget_usage
from judging.services.budget_wait import budget_below_use
from judging.services.connection_check import connection_check
from runs.models.budget import LIMIT_FIELDS
from runs.otel.export import otel_export_status

from .access import (
    TeamRequest,
    bad_request,
    editor_required,
    owner_required,
    team_object_or_404,
    team_required,
)
from .forms import (
    EXPORT_PREFIX,
    ApiKeyForm,
    BudgetForm,
    ConnectionForm,
    InviteForm,
    OtelExportForm,
    RetentionForm,
    TeamSettingsForm,
)
from .invites import invites_pending
from .middleware import SESSION_KEY
from .models import ApiKey, JudgeConnection, Role
from .selectors import api_keys_list, judge_connections_list, members_list, team_for_user
from .services import (
    ConnectionInUse,
    TeamValidationError,
    api_key_create,
    api_key_revoke,
    connection_create,
    connection_delete,
    connection_update,
    team_update_retention,
    team_update_settings,
    team_webhook_secret_rotate,
)


@login_required
@require_POST
def team_switch(request: HttpRequest) -> HttpResponse:
    """400 for a missing or malformed team id, 404 for a team the user is not a member of."""
    try:
        team_id = uuid.UUID(request.POST.get("team") or "")
    except ValueError:
        return bad_request(request, "Pick one of your teams to switch to.")
    found = team_for_user(user=request.user, team_id=team_id)
    if found is None:
        raise Http404("You are not a member of that team.")
    request.session[SESSION_KEY] = str(found[0].id)
    # Objects differ per team: land on the same section, never on another team's object.
    target = request.POST.get("next") or ""
    section = target.split("/")[1] if target.startswith("/") else ""
    allowed = url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()})
    if allowed and section in ("runs", "rubrics", "failures", "team", "batches"):
        return redirect(f"/{section}/")
    return redirect("home")


def _connection_rows(request: TeamRequest, editing: Any = None) -> list[tuple[Any, Any]]:
    """Each connection with the form that edits it (the posted one when it had errors)."""
    rows = []
    for connection in judge_connections_list(team=request.team):
        form = (
            editing if editing is not None and editing.prefix == f"conn-{connection.pk}" else None
        )
        rows.append((connection, form or ConnectionForm.for_connection(connection)))
    return rows


def settings_page(request: TeamRequest, *, status: int = 200, **context: Any) -> HttpResponse:
    team = request.team
    context.setdefault("key_form", ApiKeyForm())
    context.setdefault("connection_form", ConnectionForm(prefix="new"))
    context["connections"] = _connection_rows(request, context.get("editing"))
    context["is_owner"] = request.membership.role == "owner"
    context["members"] = members_list(team=team)
    context["invites"] = invites_pending(team=team)
    context.setdefault("invite_form", InviteForm())
    context["role_choices"] = Role.choices
    context.setdefault(
        "settings_form", TeamSettingsForm(initial=TeamSettingsForm.initial_for(team))
    )
    context.setdefault(
        "retention_form",
        RetentionForm(
            initial={
                "retention_days": team.retention_days,
                "retention_delete_protected": team.retention_delete_protected,
            }
        ),
    )
    context["export"] = export = otel_export_status(team=team)
    context.setdefault(
        "export_form",
        OtelExportForm(
            initial={"endpoint": export["endpoint"], "protocol": export["protocol"]}
            if export
            else {},
            prefix=EXPORT_PREFIX,
        ),
    )
    context["keys"] = api_keys_list(team=team).select_related("created_by")
    context["budget"] = budget = budget_for(team=team)
    context["budget_periods"] = budget_usage(team=team)
    context.setdefault(
        "budget_form", BudgetForm(initial={f: getattr(budget, f) for f in LIMIT_FIELDS})
    )
    response = render(request, "teams/settings.html", context, status=status)
    if context.keys() & {"new_key", "new_connection", "new_webhook_secret", "new_invite"}:
        add_never_cache_headers(response)  # the secret is shown once and must not be cached
    return response


@never_cache
@team_required
@require_GET
def team_settings(request: TeamRequest) -> HttpResponse:
    return settings_page(request)


@never_cache
@editor_required
@require_POST
def team_settings_save(request: TeamRequest) -> HttpResponse:
    form = TeamSettingsForm(request.POST)
    if form.is_valid():
        try:
            team_update_settings(team=request.team, **form.cleaned_data)
        except TeamValidationError as exc:
            for field, message in exc.errors.items():
                name = field.split(".")[0]
                form.add_error(name if name in form.fields else None, f"{field}: {message}")
        else:
            messages.success(request, "Team settings saved.")
            return redirect("team_settings")
    return settings_page(request, settings_form=form)


@never_cache
@owner_required
@require_POST
def team_retention_save(request: TeamRequest) -> HttpResponse:
    form = RetentionForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            team_update_retention(
                team=request.team,
                retention_days=data["retention_days"],
                delete_protected=data["retention_delete_protected"],
            )
        except TeamValidationError as exc:
            for field, message in exc.errors.items():
                form.add_error(field if field in form.fields else None, message)
        else:
            messages.success(request, "Retention saved.")
            return redirect("team_settings")
    return settings_page(request, retention_form=form, status=422)


@never_cache
@editor_required
@require_POST
def team_budget_save(request: TeamRequest) -> HttpResponse:
    form = BudgetForm(request.POST)
    if form.is_valid():
        limits = form.limits()
        warnings = budget_below_use(team_id=request.team.pk, limits=limits)
        if warnings and not form.cleaned_data["confirm"]:
            # Below what is already used: say so and ask (the "Save anyway" form posts confirm).
            return settings_page(
                request, budget_form=form, budget_warnings=warnings, budget_limits=limits
            )
        try:
            budget_update(team=request.team, **limits)
        except BudgetValidationError as exc:
            for field, message in exc.errors.items():
                form.add_error(field if field in form.fields else None, message)
        else:
            messages.success(request, "Judge budget saved.")
            return redirect("team_settings")
    return settings_page(request, budget_form=form, status=422)


@owner_required
@require_POST
def api_key_new(request: TeamRequest) -> HttpResponse:
    """Create a key and show its secret on this response only: it is stored hashed, so no
    later page can show it again (hence no redirect here)."""
    form = ApiKeyForm(request.POST)
    if not form.is_valid():
        return settings_page(request, key_form=form)
    key, raw = api_key_create(
        team=request.team,
        name=form.cleaned_data["name"],
        created_by=request.user,  # type: ignore[arg-type]
    )
    return settings_page(request, new_key=key, new_secret=raw)


@owner_required
@require_POST
def api_key_revoke_view(request: TeamRequest, key_id: Any) -> HttpResponse:
    key = team_object_or_404(request, ApiKey, id=key_id)
    api_key_revoke(key=key)
    messages.success(request, f"Key “{key.name}” revoked: requests with it now get 401.")
    return redirect("team_settings")


@owner_required
@require_POST
def webhook_secret_rotate(request: TeamRequest) -> HttpResponse:
    """Make a new webhook signing secret and show it on this response only (it is stored
    encrypted and never shown again)."""
    raw = team_webhook_secret_rotate(team=request.team)
    return settings_page(request, new_webhook_secret=raw)


@never_cache
@owner_required
@require_POST
def connection_new(request: TeamRequest) -> HttpResponse:
    """Create a connection and show its key on this response only (no redirect): every later
    page shows only its last four characters."""
    form = ConnectionForm(request.POST, prefix="new")
    if not form.is_valid():
        return settings_page(request, connection_form=form)
    data = form.cleaned_data
    try:
        connection = connection_create(
            team=request.team,
            name=data["name"],
            model=data["model"],
            api_base=data["api_base"],
            api_key=data["api_key"] or None,
            params=data["params"],
        )
    except TeamValidationError as exc:
        form.apply_service_errors(exc)
        return settings_page(request, connection_form=form)
    return settings_page(
        request, new_connection=connection, new_connection_key=data["api_key"] or ""
    )


@never_cache
@owner_required
@require_POST
def connection_edit(request: TeamRequest, connection_id: Any) -> HttpResponse:
    """Change a connection; a new key replaces the stored one, a blank one keeps it."""
    connection = team_object_or_404(request, JudgeConnection, id=connection_id)
    form = ConnectionForm(request.POST, prefix=f"conn-{connection.pk}")
    if not form.is_valid():
        return settings_page(request, editing=form)
    data = form.cleaned_data
    fields = {k: data[k] for k in ("name", "model", "api_base", "params")}
    if data["api_key"] or data["remove_key"]:
        fields["api_key"] = data["api_key"]  # blank with "remove" ticked: no key
    try:
        connection_update(connection=connection, **fields)
    except TeamValidationError as exc:
        form.apply_service_errors(exc)
        return settings_page(request, editing=form)
    messages.success(request, f"Connection “{connection.name}” saved.")
    return redirect("team_settings")


@owner_required
@require_POST
def connection_delete_view(request: TeamRequest, connection_id: Any) -> HttpResponse:
    connection = team_object_or_404(request, JudgeConnection, id=connection_id)
    try:
        connection_delete(connection=connection)
    except ConnectionInUse as exc:
        messages.error(request, page_message(exc))
    else:
        messages.success(request, f"Connection “{connection.name}” deleted.")
    return redirect("team_settings")


@owner_required
@require_POST
def connection_test_view(request: TeamRequest, connection_id: Any) -> HttpResponse:
    """One tiny judge call through the connection (as a worker would make it): the answer or
    the provider's error, as a message on the settings page."""
    connection = team_object_or_404(request, JudgeConnection, id=connection_id)
    check = connection_check(connection=connection)
    if check.ok:
        messages.success(request, f"Connection “{connection.name}” works: {check.answer}.")
    else:
        messages.error(request, f"Connection “{connection.name}” failed: {check.error}")
    return redirect("/team/#connections")
