"""The team's own settings over the API: /api/team."""

from __future__ import annotations

from datetime import datetime

from django.http import HttpRequest
from ninja import Router, Schema, Status

from evalsite.schemas import with_errors

from .api import manager
from .services import team_webhook_secret_rotate

router = Router(tags=["team"])


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
