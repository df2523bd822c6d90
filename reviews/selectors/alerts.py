"""Reads for the alerts page and API: a team's rules and its alerts, newest first."""

from __future__ import annotations

from typing import Any

from teams.models import Team

from ..models_alerts import Alert, AlertRule

ALERTS_SHOWN = 100


def alert_rules_list(*, team: Team) -> Any:
    return AlertRule.objects.filter(team=team).select_related("rubric")


def alerts_list(*, team: Team, limit: int = ALERTS_SHOWN) -> list[Alert]:
    """The team's newest alerts with their rule and delivery log (three queries)."""
    return list(
        Alert.objects.filter(team=team)
        .select_related("rule", "rule__rubric")
        .prefetch_related("deliveries")
        .order_by("-fired_at")[:limit]
    )


def alert_rule_get(*, team: Team, rule_id: Any) -> AlertRule | None:
    return AlertRule.objects.filter(team=team, pk=rule_id).first()
