"""Alert rules and alerts over the API: /api/alerts."""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

from django.http import Http404, HttpRequest
from ninja import Field, Router, Schema, Status
from pydantic import ConfigDict

from evalsite.schemas import Count, SignedAmount, with_errors
from teams.api import caller, editor

from .models_alerts import Alert, AlertRule
from .selectors.alerts import alert_rule_get, alert_rules_list, alerts_list
from .services.alerts import AlertRuleError, alert_rule_create, alert_rule_delete, alert_rule_update

router = Router(tags=["alerts"])

KindChoice = Literal[
    "criterion_failure_rate", "pass_rate_drop", "kappa_below", "judge_errors", "budget"
]


class AlertRuleIn(Schema):
    model_config = ConfigDict(extra="forbid")

    kind: KindChoice
    threshold: SignedAmount = Field(
        description="percent (failure rate, budget used), points (pass-rate drop), a kappa, "
        "or a count of failed evaluations"
    )
    rubric: str | None = Field(default=None, description="id or slug; every kind but budget")
    criterion_key: str = Field(default="", max_length=32)
    window_hours: Count = 24
    cooldown_minutes: Count = 60
    webhook_url: str = Field(default="", max_length=500)
    webhook_format: Literal["json", "slack"] = "json"


class AlertRulePatch(Schema):
    """The fields to change (absent ones keep their values)."""

    model_config = ConfigDict(extra="forbid")

    kind: KindChoice | None = None
    threshold: SignedAmount | None = None
    rubric: str | None = Field(default=None, description="id or slug")
    criterion_key: str | None = Field(default=None, max_length=32)
    window_hours: Count | None = None
    cooldown_minutes: Count | None = None
    webhook_url: str | None = Field(default=None, max_length=500)
    webhook_format: Literal["json", "slack"] | None = None
    enabled: bool | None = Field(default=None, description="false: not evaluated; resolves it")


class AlertRuleOut(Schema):
    id: UUID
    kind: str
    threshold: float
    rubric_id: UUID | None
    criterion_key: str
    window_hours: int
    cooldown_minutes: int
    webhook_url: str
    webhook_format: str
    enabled: bool
    created_at: datetime


class DeliveryOut(Schema):
    event: str
    attempt: int
    status_code: int | None
    ok: bool
    error: str
    created_at: datetime


class AlertOut(Schema):
    id: UUID
    rule_id: UUID
    kind: str
    value: float | None
    message: str
    run_ids: list[str]
    runs_query: str
    fired_at: datetime
    resolved_at: datetime | None
    deliveries: list[DeliveryOut]


def rule_out(rule: AlertRule) -> dict:
    return {f: getattr(rule, f) for f in AlertRuleOut.model_fields if f != "rubric_id"} | {
        "rubric_id": rule.rubric_id
    }


def alert_out(alert: Alert) -> dict:
    return {
        "id": alert.pk,
        "rule_id": alert.rule_id,
        "kind": alert.rule.kind,
        "value": alert.value,
        "message": alert.message,
        "run_ids": alert.run_ids,
        "runs_query": alert.runs_query,
        "fired_at": alert.fired_at,
        "resolved_at": alert.resolved_at,
        "deliveries": list(alert.deliveries.all()),
    }


@router.get("/rules", response=with_errors({200: list[AlertRuleOut]}))
def rules_list(request: HttpRequest):
    """The team's alert rules, oldest first."""
    return [rule_out(r) for r in alert_rules_list(team=caller(request).team)]


@router.post("/rules", response=with_errors({201: AlertRuleOut}))
def rule_create(request: HttpRequest, payload: AlertRuleIn):
    """Add a rule (editors and API keys). A malformed rule is a 422 naming the field."""
    rule = alert_rule_create(team=editor(request).team, **payload.model_dump())
    return Status(201, rule_out(rule))


@router.patch("/rules/{rule_id}", response=with_errors({200: AlertRuleOut}, 404))
def rule_update(request: HttpRequest, rule_id: UUID, payload: AlertRulePatch):
    """Change a rule (editors and API keys): the fields given, checked as for a new rule (422
    naming the field). Disabling a rule resolves its open alert."""
    rule = alert_rule_get(team=editor(request).team, rule_id=rule_id)
    if rule is None:
        raise Http404("No such alert rule")
    changes = payload.model_dump(exclude_unset=True)
    null = sorted(k for k, v in changes.items() if v is None and k != "rubric")
    if null:
        raise AlertRuleError({name: "cannot be null: leave it out to keep it" for name in null})
    return rule_out(alert_rule_update(rule=rule, **changes))


@router.delete("/rules/{rule_id}", response=with_errors({204: None}, 404))
def rule_delete(request: HttpRequest, rule_id: UUID):
    """Delete a rule and its alerts' history."""
    rule = alert_rule_get(team=editor(request).team, rule_id=rule_id)
    if rule is None:
        raise Http404("No such alert rule")
    alert_rule_delete(rule=rule)
    return Status(204, None)


@router.get("", response=with_errors({200: list[AlertOut]}))
def alerts_get(request: HttpRequest):
    """The team's newest 100 alerts (open and resolved) with their webhook delivery log."""
    return [alert_out(a) for a in alerts_list(team=caller(request).team)]
