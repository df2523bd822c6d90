"""The team's own settings over the API: /api/team."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.http import HttpRequest
from ninja import Field, Router, Schema, Status
from pydantic import ConfigDict

from evalsite.schemas import Amount, BigCount, with_errors

from .api import caller, editor, manager
from .models import Team
from .services import team_update_retention, team_update_settings, team_webhook_secret_rotate

router = Router(tags=["team"])

PRICES_HELP = (
    'Judge prices by litellm model string, USD per million tokens: {"openai/my-judge": '
    '{"input": 0.15, "output": 0.6}}; they override litellm\'s table. A model priced by '
    "neither has an unknown cost (null)."
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


def _settings_out(team: Team) -> dict[str, Any]:
    return {
        "confirm_cost_above": float(team.confirm_cost_above),
        "confirm_tokens_above": team.confirm_tokens_above,
        "judge_prices": team.judge_prices,
        "retention_days": team.retention_days,
        "retention_delete_protected": team.retention_delete_protected,
    }


@router.get("/settings", response=with_errors({200: TeamSettingsOut}))
def get_settings(request: HttpRequest):
    """The team's re-score confirmation thresholds and judge prices."""
    return _settings_out(caller(request).team)


@router.patch("/settings", response=with_errors({200: TeamSettingsOut}))
def update_settings(request: HttpRequest, payload: TeamSettingsPatch):
    """Change the thresholds or the judge prices (editors and API keys) or the retention
    (owners and API keys: it deletes runs); a price below 0, a malformed entry, a threshold out
    of range or a retention under 1 day is a 422 naming the field."""
    changes = payload.model_dump(exclude_unset=True)
    retention = {k: changes.pop(k) for k in RETENTION_FIELDS if k in changes}
    team = (manager(request) if retention else editor(request)).team
    with transaction.atomic():  # all the fields change, or none
        if retention:
            team_update_retention(
                team=team, **{RETENTION_FIELDS[k]: v for k, v in retention.items()}
            )
        team_update_settings(team=team, **changes)
    return _settings_out(team)


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
