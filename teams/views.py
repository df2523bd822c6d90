"""Team pages: switching teams, and team settings (API keys, re-score confirmation cost)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.cache import add_never_cache_headers
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from .access import editor_required, team_object_or_404, team_required
from .middleware import SESSION_KEY
from .models import ApiKey
from .selectors import api_keys_list, team_for_user
from .services import TeamValidationError, api_key_create, api_key_revoke, team_update_settings


@login_required
@require_POST
def team_switch(request: HttpRequest) -> HttpResponse:
    found = team_for_user(user=request.user, team_id=request.POST.get("team", ""))
    if found is not None:
        request.session[SESSION_KEY] = str(found[0].id)
    # Objects differ per team: land on the same section, never on another team's object.
    target = request.POST.get("next") or ""
    section = target.split("/")[1] if target.startswith("/") else ""
    allowed = url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()})
    if allowed and section in ("runs", "rubrics", "failures", "team", "batches"):
        return redirect(f"/{section}/")
    return redirect("home")


@login_required
def no_team(request: HttpRequest) -> HttpResponse:
    return render(request, "teams/no_team.html")


class ApiKeyForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="Where the key is used, e.g. “CI pipeline”.")


class TeamSettingsForm(forms.Form):
    confirm_cost_above = forms.DecimalField(
        label="Ask for confirmation above (USD)",
        min_value=0,
        max_digits=10,
        decimal_places=2,
        help_text="Re-score batches whose estimated judge cost is higher ask before starting.",
    )


def _settings_page(request: HttpRequest, *, status: int = 200, **context: Any) -> HttpResponse:
    team = request.team  # type: ignore[attr-defined]
    context.setdefault("key_form", ApiKeyForm())
    context.setdefault(
        "settings_form", TeamSettingsForm(initial={"confirm_cost_above": team.confirm_cost_above})
    )
    context["keys"] = api_keys_list(team=team).select_related("created_by")
    response = render(request, "teams/settings.html", context, status=status)
    if "new_key" in context:
        add_never_cache_headers(response)  # the secret is shown once and must not be cached
    return response


@team_required
@require_GET
def team_settings(request: HttpRequest) -> HttpResponse:
    return _settings_page(request)


@editor_required
@require_POST
def team_settings_save(request: HttpRequest) -> HttpResponse:
    form = TeamSettingsForm(request.POST)
    if form.is_valid():
        try:
            team_update_settings(team=request.team, **form.cleaned_data)  # type: ignore[attr-defined]
        except TeamValidationError as exc:
            for field, message in exc.errors.items():
                form.add_error(field if field in form.fields else None, message)
        else:
            messages.success(request, "Team settings saved.")
            return redirect("team_settings")
    return _settings_page(request, settings_form=form)


@editor_required
@require_POST
def api_key_new(request: HttpRequest) -> HttpResponse:
    """Create a key and show its secret on this response only: it is stored hashed, so no
    later page can show it again (hence no redirect here)."""
    form = ApiKeyForm(request.POST)
    if not form.is_valid():
        return _settings_page(request, key_form=form)
    key, raw = api_key_create(
        team=request.team,  # type: ignore[attr-defined]
        name=form.cleaned_data["name"],
        created_by=request.user,  # type: ignore[arg-type]
    )
    return _settings_page(request, new_key=key, new_secret=raw)


@editor_required
@require_POST
def api_key_revoke_view(request: HttpRequest, key_id: Any) -> HttpResponse:
    key = team_object_or_404(request, ApiKey, id=key_id)
    api_key_revoke(key=key)
    messages.success(request, f"Key “{key.name}” revoked: requests with it now get 401.")
    return redirect("team_settings")
