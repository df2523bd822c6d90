"""The alerts page: the team's rules (added, edited and deleted by editors) and the history of
its alerts, each linking to the runs that caused it, with its webhook delivery log."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from evalsite.schemas import FLOAT_MAX, INT_MAX
from rubrics.models import Rubric
from teams.access import TeamRequest, editor_required, team_required

from .models_alerts import AlertKind, WebhookFormat
from .selectors.alerts import alert_rule_get, alert_rules_list, alerts_list
from .services.alerts import (
    AlertRuleError,
    alert_rule_create,
    alert_rule_delete,
    alert_rule_update,
)


class AlertRuleForm(forms.Form):
    kind = forms.ChoiceField(label="When", choices=AlertKind.choices)
    rubric = forms.ChoiceField(label="Rubric", required=False)
    criterion_key = forms.CharField(
        label="Criterion key", required=False, max_length=32, help_text="e.g. c1 (failure rate)"
    )
    threshold = forms.FloatField(
        label="Threshold",
        min_value=-FLOAT_MAX,
        max_value=FLOAT_MAX,
        help_text="% (failure rate, budget used), points (pass-rate drop), a kappa, or a count",
    )
    window_hours = forms.IntegerField(
        label="Window (hours)", initial=24, min_value=0, max_value=INT_MAX
    )
    cooldown_minutes = forms.IntegerField(
        label="Cool-down (minutes)", initial=60, min_value=0, max_value=INT_MAX
    )
    webhook_url = forms.CharField(label="Webhook URL", required=False, max_length=500)
    webhook_format = forms.ChoiceField(label="Payload", choices=WebhookFormat.choices)
    enabled = forms.BooleanField(
        label="Enabled", required=False, initial=True, help_text="off: not evaluated"
    )

    def __init__(self, *args: Any, team: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        rubrics = Rubric.objects.filter(team=team).order_by("name").values_list("slug", "name")
        field = self.fields["rubric"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [("", "— (budget alerts)"), *rubrics]


def _page(request: TeamRequest, form: AlertRuleForm | None = None, status: int = 200):
    context = {
        "rules": alert_rules_list(team=request.team),
        "alerts": alerts_list(team=request.team),
        "form": form or AlertRuleForm(team=request.team),
    }
    return render(request, "reviews/alerts.html", context, status=status)


@never_cache
@team_required
@require_GET
def alerts(request: HttpRequest) -> HttpResponse:
    return _page(request)  # type: ignore[arg-type]


def _saved(form: AlertRuleForm, save: Any) -> bool:
    """Validate the form and save through ``save(**fields)``; errors land on the form."""
    if not form.is_valid():
        return False
    data = form.cleaned_data
    try:
        save(**{**data, "rubric": data["rubric"] or None})
    except AlertRuleError as exc:
        for field, message in exc.errors.items():
            form.add_error(field if field in form.fields else None, message)
        return False
    return True


@never_cache
@editor_required
@require_POST
def alert_rule_new(request: TeamRequest) -> HttpResponse:
    form = AlertRuleForm(request.POST, team=request.team)
    if _saved(form, lambda **fields: alert_rule_create(team=request.team, **fields)):
        messages.success(request, "Alert rule added.")
        return redirect("reviews:alerts")
    return _page(request, form, status=422)


@never_cache
@editor_required
def alert_rule_edit(request: TeamRequest, rule_id: Any) -> HttpResponse:
    rule = alert_rule_get(team=request.team, rule_id=rule_id)
    if rule is None:
        raise Http404("No such alert rule")
    if request.method == "POST":
        form = AlertRuleForm(request.POST, team=request.team)
        if _saved(form, lambda **fields: alert_rule_update(rule=rule, **fields)):
            messages.success(request, "Alert rule saved.")
            return redirect("reviews:alerts")
        status = 422
    else:
        initial = {name: getattr(rule, name) for name in AlertRuleForm.base_fields}
        initial["rubric"] = rule.rubric.slug if rule.rubric else ""
        form, status = AlertRuleForm(initial=initial, team=request.team), 200
    return render(
        request, "reviews/alert_rule_edit.html", {"rule": rule, "form": form}, status=status
    )


@editor_required
@require_POST
def alert_rule_remove(request: TeamRequest, rule_id: Any) -> HttpResponse:
    rule = alert_rule_get(team=request.team, rule_id=rule_id)
    if rule is None:
        raise Http404("No such alert rule")
    alert_rule_delete(rule=rule)
    messages.success(request, "Alert rule deleted.")
    return redirect("reviews:alerts")
