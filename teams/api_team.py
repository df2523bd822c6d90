"""The team's own settings over the API: /api/team."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from django.db import transaction
from django.http import HttpRequest
from ninja import Field, Router, Schema, Status
from pydantic import ConfigDict

from evalsite.schemas import Amount, BigCount, with_errors
from runs.otel.export import otel_export_status

from .api import caller, editor, manager
from .models import Team
from .otel_export import otel_export_remove, otel_export_set
from .services import team_update_retention, team_update_settings, team_webhook_secret_rotate

router = Router(tags=["team"])

PRICES_HELP = (
    'Judge prices by litellm model string, USD per million tokens: {"openai/my-judge": '
    '{"input": 0.15, "output": 0.6}}; they override litellm\'s table. A model priced by '
    "neither has an unknown cost (null)."
)


class OtelExportOut(Schema):
    endpoint: str = Field(description="The OTLP/HTTP logs endpoint verdicts are sent to")
    protocol: Literal["http/protobuf", "http/json"]
    header_names: list[str] = Field(description="The headers sent (names only: write-only)")
    pending: int = Field(description="Evaluations waiting to be sent (or retried)")
    sent_events: int
    failed_events: int = Field(description="Events given up on (refused, or out of attempts)")
    dropped_evaluations: int = Field(
        description="Evaluations dropped unsent because too many were waiting"
    )
    last_success_at: datetime | None
    last_error: str = Field(description="The last failure, as the team is told it; empty: none")
    last_error_at: datetime | None


class OtelExportIn(Schema):
    """Omitted ``headers`` keep the stored ones; given (even ``{}``), they replace them."""

    model_config = ConfigDict(extra="forbid")
    endpoint: str = Field(
        max_length=2000, description="e.g. https://otlp.example.com/v1/logs (the full URL)"
    )
    protocol: Literal["http/protobuf", "http/json"] = "http/protobuf"
    headers: dict[str, str] | None = Field(
        default=None, description="Sent with every export, stored encrypted, never shown again"
    )


class TeamSettingsOut(Schema):
    confirm_cost_above: float = Field(
        description="Re-scores estimated above this many USD ask for confirmation"
    )
    confirm_tokens_above: int = Field(
        description="When the cost is unknown, re-scores above this many tokens ask instead"
    )
    judge_prices: dict[str, dict[str, float]] = Field(description=PRICES_HELP)
    retention_days: int | None = Field(
        description="Runs older than this many days are deleted (null: kept forever)"
    )
    retention_delete_protected: bool = Field(
        description="Retention also deletes golden-set, human-labelled and example runs"
    )
    otel_export: OtelExportOut | None = Field(
        description="Verdicts sent to the team's own tracing (null: not set)"
    )


class TeamSettingsPatch(Schema):
    """Only the fields sent change; `judge_prices` replaces the whole table."""

    model_config = ConfigDict(extra="forbid")
    confirm_cost_above: Amount | None = None
    confirm_tokens_above: BigCount | None = None
    judge_prices: dict[str, Any] | None = Field(default=None, description=PRICES_HELP)
    # Any (not int): the service names the field in its 422 for a fraction, a string or 0.
    retention_days: Any = Field(
        default=None, description="1..36500 days, or null to keep runs forever (owners)"
    )
    retention_delete_protected: Any = Field(default=None, description="true or false (owners)")
    otel_export: OtelExportIn | None = Field(
        default=None, description="Send verdicts to an OTLP endpoint (owners); null removes it"
    )


def _settings_out(team: Team) -> dict[str, Any]:
    return {
        "confirm_cost_above": float(team.confirm_cost_above),
        "confirm_tokens_above": team.confirm_tokens_above,
        "judge_prices": team.judge_prices,
        "retention_days": team.retention_days,
        "retention_delete_protected": team.retention_delete_protected,
        "otel_export": otel_export_status(team=team),
    }


@router.get("/settings", response=with_errors({200: TeamSettingsOut}))
def get_settings(request: HttpRequest):
    """The team's re-score confirmation thresholds and judge prices."""
    return _settings_out(caller(request).team)


@router.patch("/settings", response=with_errors({200: TeamSettingsOut}))
def update_settings(request: HttpRequest, payload: TeamSettingsPatch):
    """Change the thresholds or the judge prices (editors and API keys), or the retention (it
    deletes runs) or the OTLP export of verdicts (owners and API keys); a price below 0, a
    malformed entry, a threshold out of range, a retention under 1 day or an export endpoint the
    outbound guard refuses is a 422 naming the field. The export's headers are never answered:
    only their names."""
    changes = payload.model_dump(exclude_unset=True)
    owners = {k: changes.pop(k) for k in (*RETENTION_FIELDS, "otel_export") if k in changes}
    team = (manager(request) if owners else editor(request)).team
    with transaction.atomic():  # all the fields change, or none
        if retention := {k: v for k, v in owners.items() if k in RETENTION_FIELDS}:
            team_update_retention(
                team=team, **{RETENTION_FIELDS[k]: v for k, v in retention.items()}
            )
        if "otel_export" in owners:
            _export_change(team, owners["otel_export"])
        team_update_settings(team=team, **changes)
    return _settings_out(team)


def _export_change(team: Team, given: dict[str, Any] | None) -> None:
    if given is None:
        otel_export_remove(team=team)
    else:
        otel_export_set(team=team, **given)


RETENTION_FIELDS = {
    "retention_days": "retention_days",
    "retention_delete_protected": "delete_protected",
}


class WebhookSecretOut(Schema):
    secret: str
    rotated_at: datetime


@router.post("/webhook-secret", response=with_errors({201: WebhookSecretOut}))
def rotate_webhook_secret(request: HttpRequest):
    """Replace the secret that signs the team's re-score webhooks (owners and API keys). The
    answer is the only time the secret is shown: it is stored encrypted."""
    team = manager(request).team
    secret = team_webhook_secret_rotate(team=team)
    return Status(201, {"secret": secret, "rotated_at": team.webhook_secret_rotated_at})
