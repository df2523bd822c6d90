"""Rubrics and their versions, judge connections, the team's webhook secret and the
OpenTelemetry services' default rubrics. ``rubric`` is a rubric's id or slug; ``connection``
a connection's id or name."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

from ._base import BaseClient, body
from .types import (
    Connection,
    DraftedCriterion,
    Invite,
    NewInvite,
    OtelRejection,
    OtelService,
    Rubric,
    RubricPage,
    TeamSettings,
    Trend,
    Version,
    VersionPage,
    WebhookSecret,
)

Criteria = str | list[dict[str, Any]]


class RubricsMixin(BaseClient):
    # --- Rubrics ------------------------------------------------------------------------------

    def list_rubrics(
        self, *, include_archived: bool = False, cursor: str | None = None, limit: int | None = None
    ) -> RubricPage:
        params = body(include_archived=include_archived, cursor=cursor, limit=limit)
        return cast(RubricPage, self._json("rubrics_api_list_rubrics", params=params))

    def iter_rubrics(self, *, include_archived: bool = False) -> Iterator[Rubric]:
        return self._pages(
            "rubrics_api_list_rubrics", None, {"include_archived": include_archived, "limit": 200}
        )

    def create_rubric(
        self, name: str, *, criteria: Criteria | None = None, slug: str | None = None, **fields: Any
    ) -> Rubric:
        """Create a rubric (version 1 when ``criteria`` are given). ``fields``: description,
        judge_connection, judge_model, judge_params, scale, strategy, alignment_mode,
        alignment_weights, judge_view, run_token_budget."""
        payload = body(name=name, criteria=criteria, slug=slug) | fields
        return cast(Rubric, self._json("rubrics_api_create_rubric", json=payload))

    def get_rubric(self, rubric: str) -> Rubric:
        return cast(Rubric, self._json("rubrics_api_get_rubric", {"rubric": rubric}))

    def update_rubric(self, rubric: str, **fields: Any) -> Rubric:
        """Change the fields given (a ``judge_connection=None`` sends null: the deployment's
        judge). A new ``judge_view`` or ``run_token_budget`` makes a new version."""
        path = {"rubric": rubric}
        return cast(Rubric, self._json("rubrics_api_update_rubric", path, json=fields))

    def archive_rubric(self, rubric: str) -> Rubric:
        return cast(Rubric, self._json("rubrics_api_archive_rubric", {"rubric": rubric}))

    def set_criteria(
        self,
        rubric: str,
        criteria: Criteria,
        *,
        note: str = "",
        judge_view: str | None = None,
        run_token_budget: int | None = None,
        instructions: str | None = None,
    ) -> Version:
        """A new version with these criteria (the current one when nothing changed)."""
        payload = body(
            criteria=criteria, note=note, judge_view=judge_view,
            run_token_budget=run_token_budget, instructions=instructions,
        )  # fmt: skip
        path = {"rubric": rubric}
        return cast(Version, self._json("rubrics_api_set_criteria", path, json=payload))

    def list_versions(
        self, rubric: str, *, cursor: str | None = None, limit: int | None = None
    ) -> VersionPage:
        path, params = {"rubric": rubric}, body(cursor=cursor, limit=limit)
        return cast(VersionPage, self._json("rubrics_api_list_versions", path, params=params))

    def get_version(self, rubric: str, number: int) -> Version:
        path = {"rubric": rubric, "number": number}
        return cast(Version, self._json("rubrics_api_get_version", path))

    def get_trend(self, rubric: str, *, days: int | None = None) -> Trend:
        """The rubric's pass rate per UTC day over the last ``days`` (1-365, default 30), one
        series per rubric version: versions are never mixed in one series."""
        path, params = {"rubric": rubric}, body(days=days)
        return cast(Trend, self._json("rubrics_api_get_trend", path, params=params))

    def draft_criteria(
        self, system_prompt: str, *, runs: list[str] | None = None
    ) -> list[DraftedCriterion]:
        """Criteria the judge drafts from an agent's system prompt (and up to 5 of the team's
        runs), for you to edit and pass to ``create_rubric``: nothing is saved."""
        payload = body(system_prompt=system_prompt, runs=runs)
        answer = self._json("rubric_draft_from_prompt", json=payload)
        return cast(list[DraftedCriterion], answer["criteria"])

    # --- Judge connections ----------------------------------------------------------------------

    def list_connections(self) -> list[Connection]:
        return cast(list[Connection], self._json("teams_api_connections_list_connections"))

    def create_connection(
        self,
        name: str,
        model: str,
        *,
        api_base: str = "",
        api_key: str | None = None,
        params: dict[str, Any] | None = None,
    ) -> Connection:
        payload = body(name=name, model=model, api_base=api_base, api_key=api_key, params=params)
        return cast(Connection, self._json("teams_api_connections_create_connection", json=payload))

    def get_connection(self, connection: str) -> Connection:
        path = {"connection": connection}
        return cast(Connection, self._json("teams_api_connections_get_connection", path))

    def update_connection(self, connection: str, **fields: Any) -> Connection:
        """Change the fields given; ``api_key=None`` removes the key."""
        path = {"connection": connection}
        return cast(
            Connection,
            self._json("teams_api_connections_update_connection", path, json=fields),
        )

    def delete_connection(self, connection: str) -> None:
        self._request("teams_api_connections_delete_connection", {"connection": connection})

    # --- Team -----------------------------------------------------------------------------------

    def get_team_settings(self) -> TeamSettings:
        """The re-score confirmation thresholds and the team's judge prices."""
        return cast(TeamSettings, self._json("teams_api_team_get_settings"))

    def update_team_settings(self, **fields: Any) -> TeamSettings:
        """Change ``confirm_cost_above``, ``confirm_tokens_above`` or ``judge_prices``
        ({model: {"input", "output"}}, USD per million tokens; replaces the whole table)."""
        return cast(TeamSettings, self._json("teams_api_team_update_settings", json=fields))

    def rotate_webhook_secret(self) -> WebhookSecret:
        """A new secret for the team's webhook signatures: shown this once."""
        return cast(WebhookSecret, self._json("teams_api_team_rotate_webhook_secret"))

    def list_invites(self) -> list[Invite]:
        """The team's open invitations, newest first (expired ones too)."""
        return cast(list[Invite], self._json("teams_api_invites_list_invites"))

    def create_invite(self, email: str, role: str = "editor") -> NewInvite:
        """Invite an address that has no account; ``link`` is in this answer only (and mailed
        when the deployment has email settings)."""
        body = {"email": email, "role": role}
        return cast(NewInvite, self._json("teams_api_invites_create_invite", json=body))

    def revoke_invite(self, invite_id: str) -> None:
        """Stop an invitation's link from working."""
        self._request("teams_api_invites_revoke_invite", {"invite_id": invite_id})

    # --- OpenTelemetry services -----------------------------------------------------------------

    def list_otel_services(self) -> list[OtelService]:
        return cast(list[OtelService], self._json("runs_api_otel_list_services"))

    def set_otel_service(self, service_name: str, rubric: str | None) -> list[OtelService]:
        """The default rubric of spans from ``service_name`` (None removes it)."""
        payload = {"service_name": service_name, "rubric": rubric}
        return cast(list[OtelService], self._json("runs_api_otel_set_service", json=payload))

    def list_otel_rejections(self, limit: int = 50) -> list[OtelRejection]:
        """The team's newest OTLP rejections and warnings, newest first (docs/otel.md)."""
        page = self._json("runs_api_otel_list_rejections", params={"limit": limit})
        return cast(list[OtelRejection], page["items"])

    # --- Judge budget and usage (docs/budgets.md) ------------------------------------------------

    def get_budget(self) -> dict[str, Any]:
        """The team's judge budget (four limits, None: no limit) and its usage this day/month."""
        return cast(dict[str, Any], self._json("runs_api_usage_budget_get"))

    def set_budget(
        self,
        *,
        daily_tokens: int | None = None,
        daily_usd: float | None = None,
        monthly_tokens: int | None = None,
        monthly_usd: float | None = None,
    ) -> dict[str, Any]:
        """Set all four limits at once (None: no limit); over-budget work resumes if there is
        room."""
        payload = {
            "daily_tokens": daily_tokens,
            "daily_usd": daily_usd,
            "monthly_tokens": monthly_tokens,
            "monthly_usd": monthly_usd,
        }
        return cast(dict[str, Any], self._json("runs_api_usage_budget_put", json=payload))

    def get_usage(self, *, start: str | None = None, end: str | None = None) -> dict[str, Any]:
        """Judge usage per day, rubric and judge model from ``start`` to ``end`` (ISO dates)."""
        params = {k: v for k, v in {"start": start, "end": end}.items() if v is not None}
        return cast(dict[str, Any], self._json("runs_api_usage_usage_get", params=params))

    # --- Alerts (docs/alerts.md) ---------------------------------------------------------------

    def list_alert_rules(self) -> list[dict[str, Any]]:
        return cast(list[dict[str, Any]], self._json("reviews_api_alerts_rules_list"))

    def create_alert_rule(self, kind: str, threshold: float, **fields: Any) -> dict[str, Any]:
        """A rule: ``kind``, ``threshold`` and ``rubric``, ``criterion_key``, ``window_hours``,
        ``cooldown_minutes``, ``webhook_url``, ``webhook_format`` as the API takes them."""
        payload = body(kind=kind, threshold=threshold, **fields)
        return cast(dict[str, Any], self._json("reviews_api_alerts_rule_create", json=payload))

    def update_alert_rule(self, rule_id: str, **changes: Any) -> dict[str, Any]:
        """Change some fields of a rule (the others keep theirs); ``enabled=False`` turns it
        off and resolves its open alert."""
        path = {"rule_id": rule_id}
        return cast(
            dict[str, Any], self._json("reviews_api_alerts_rule_update", path, json=changes)
        )

    def delete_alert_rule(self, rule_id: str) -> None:
        self._request("reviews_api_alerts_rule_delete", {"rule_id": rule_id})

    def list_alerts(self) -> list[dict[str, Any]]:
        """The newest alerts, open and resolved, with their webhook delivery log."""
        return cast(list[dict[str, Any]], self._json("reviews_api_alerts_alerts_get"))
