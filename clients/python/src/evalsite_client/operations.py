"""Every operation of the evalsite API the client covers: the one table the client's methods
call through (method and path come from here, nowhere else), and that a test compares with the
live ``/api/openapi.json``, so the two cannot drift apart.

``idempotent``: sending the request twice does no more than sending it once (reads, PUT,
PATCH, DELETE, writes the client always gives a key). Only those are retried after an answer
that leaves open whether the first attempt did its work (502/503/504, a dropped connection).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    client_method: str  # the Client method that calls it
    idempotent: bool


def _op(method: str, path: str, client_method: str, idempotent: bool = True) -> Operation:
    return Operation(method, path, client_method, idempotent)


OPERATIONS: dict[str, Operation] = {
    # Rubrics and versions
    "rubrics_api_list_rubrics": _op("GET", "/api/rubrics", "list_rubrics"),
    "rubrics_api_create_rubric": _op("POST", "/api/rubrics", "create_rubric", idempotent=False),
    "rubrics_api_get_rubric": _op("GET", "/api/rubrics/{rubric}", "get_rubric"),
    "rubrics_api_update_rubric": _op("PATCH", "/api/rubrics/{rubric}", "update_rubric"),
    "rubrics_api_archive_rubric": _op("POST", "/api/rubrics/{rubric}/archive", "archive_rubric"),
    "rubrics_api_set_criteria": _op("PUT", "/api/rubrics/{rubric}/criteria", "set_criteria"),
    "rubrics_api_list_versions": _op("GET", "/api/rubrics/{rubric}/versions", "list_versions"),
    "rubrics_api_get_version": _op("GET", "/api/rubrics/{rubric}/versions/{number}", "get_version"),
    "rubrics_api_get_trend": _op("GET", "/api/rubrics/{rubric}/trend", "get_trend"),
    "rubric_draft_from_prompt": _op(
        "POST", "/api/rubrics/draft-from-prompt", "draft_criteria", idempotent=False
    ),
    # Judge connections and the team
    "teams_api_connections_list_connections": _op("GET", "/api/connections", "list_connections"),
    "teams_api_connections_create_connection": _op(
        "POST", "/api/connections", "create_connection", idempotent=False
    ),
    "teams_api_connections_get_connection": _op(
        "GET", "/api/connections/{connection}", "get_connection"
    ),
    "teams_api_connections_update_connection": _op(
        "PATCH", "/api/connections/{connection}", "update_connection"
    ),
    "teams_api_connections_delete_connection": _op(
        "DELETE", "/api/connections/{connection}", "delete_connection"
    ),
    "teams_api_team_get_settings": _op("GET", "/api/team/settings", "get_team_settings"),
    "teams_api_team_update_settings": _op("PATCH", "/api/team/settings", "update_team_settings"),
    "teams_api_team_rotate_webhook_secret": _op(
        "POST", "/api/team/webhook-secret", "rotate_webhook_secret", idempotent=False
    ),
    "teams_api_invites_list_invites": _op("GET", "/api/team/invites", "list_invites"),
    "teams_api_invites_create_invite": _op(
        "POST", "/api/team/invites", "create_invite", idempotent=False
    ),
    "teams_api_invites_revoke_invite": _op(
        "DELETE", "/api/team/invites/{invite_id}", "revoke_invite"
    ),
    # Runs, evaluations, synchronous scoring (runs and scores always carry an external_id)
    "runs_api_create_run": _op("POST", "/api/runs", "create_run"),
    "runs_api_list_runs": _op("GET", "/api/runs", "list_runs"),
    "runs_api_create_runs_bulk": _op("POST", "/api/runs/bulk", "create_runs_bulk"),
    "runs_api_get_run": _op("GET", "/api/runs/{run_id}", "get_run"),
    "runs_api_delete_run": _op("DELETE", "/api/runs/{run_id}", "delete_run"),
    "reviews_api_export_export_runs": _op("GET", "/api/runs/export", "export_runs"),
    "runs_api_get_evaluation": _op("GET", "/api/evaluations/{evaluation_id}", "get_evaluation"),
    "runs_api_score": _op("POST", "/api/score", "score"),
    # Re-scoring (always with an Idempotency-Key)
    "rescore": _op("POST", "/api/rescore", "rescore"),
    "rescore_run": _op("POST", "/api/runs/{run_id}/rescore", "rescore_run"),
    "list_batches": _op("GET", "/api/batches", "list_batches"),
    "get_batch": _op("GET", "/api/batches/{batch_id}", "get_batch"),
    "cancel_batch": _op("POST", "/api/batches/{batch_id}/cancel", "cancel_batch"),
    # Human review, golden sets, calibration
    "reviews_api_create_override": _op("POST", "/api/runs/{run_id}/overrides", "create_override"),
    "reviews_api_list_overrides": _op("GET", "/api/runs/{run_id}/overrides", "get_review"),
    "reviews_api_revert_override": _op(
        "POST", "/api/runs/{run_id}/overrides/{override_id}/revert", "revert_override", False
    ),
    "reviews_api_create_alignment_override": _op(
        "POST", "/api/runs/{run_id}/alignment-overrides", "create_alignment_override"
    ),
    "reviews_api_revert_alignment_override": _op(
        "POST",
        "/api/runs/{run_id}/alignment-overrides/{override_id}/revert",
        "revert_alignment_override",
        idempotent=False,
    ),
    "reviews_api_mark_golden": _op("POST", "/api/runs/{run_id}/golden", "mark_golden"),
    "reviews_api_agreement": _op("GET", "/api/rubrics/{rubric}/agreement", "get_agreement"),
    "reviews_api_export_csv": _op("GET", "/api/rubrics/{rubric}/reviews.csv", "export_reviews_csv"),
    "reviews_api_export_jsonl": _op(
        "GET", "/api/rubrics/{rubric}/reviews.jsonl", "export_reviews_jsonl"
    ),
    "reviews_api_start_golden_run": _op(
        "POST", "/api/rubrics/{rubric}/golden-runs", "start_golden_run", idempotent=False
    ),
    "reviews_api_start_consistency_check": _op(
        "POST",
        "/api/rubrics/{rubric}/consistency-checks",
        "start_consistency_check",
        idempotent=False,
    ),
    "reviews_api_get_calibration": _op(
        "GET", "/api/calibrations/{calibration_id}", "get_calibration"
    ),
    # Comparisons, drafts and the publishing gate (comparisons always with an Idempotency-Key)
    "comparison_create": _op("POST", "/api/comparisons", "create_comparison"),
    "comparison_get": _op("GET", "/api/comparisons/{comparison_id}", "get_comparison"),
    "comparison_export": _op("GET", "/api/comparisons/{comparison_id}/export", "export_comparison"),
    "rubric_draft_create": _op("POST", "/api/rubrics/{rubric_ref}/drafts", "create_draft"),
    "rubric_gate_set": _op("PUT", "/api/rubrics/{rubric_ref}/gate", "set_gate"),
    "rubric_version_publish": _op(
        "POST",
        "/api/rubrics/{rubric_ref}/versions/{number}/publish",
        "publish_version",
        idempotent=False,
    ),
    # Suggested criterion edits (asking again while one is pending answers that one)
    "rubric_suggestions_create": _op(
        "POST", "/api/rubrics/{rubric_ref}/suggestions", "suggest_edits"
    ),
    "rubric_suggestions_list": _op(
        "GET", "/api/rubrics/{rubric_ref}/suggestions", "list_suggestions"
    ),
    "rubric_suggestion_accept": _op(
        "POST",
        "/api/rubrics/{rubric_ref}/suggestions/{suggestion_id}/accept",
        "accept_suggestion",
    ),
    "rubric_suggestion_dismiss": _op(
        "POST",
        "/api/rubrics/{rubric_ref}/suggestions/{suggestion_id}/dismiss",
        "dismiss_suggestion",
    ),
    "rubric_suggestion_threshold_set": _op(
        "PUT", "/api/rubrics/{rubric_ref}/suggestions/threshold", "set_suggestion_threshold"
    ),
    # Judge budget and usage
    "runs_api_usage_budget_get": _op("GET", "/api/team/budget", "get_budget"),
    "runs_api_usage_budget_put": _op("PUT", "/api/team/budget", "set_budget"),
    "runs_api_usage_usage_get": _op("GET", "/api/usage", "get_usage"),
    # Alerts
    "reviews_api_alerts_rules_list": _op("GET", "/api/alerts/rules", "list_alert_rules"),
    "reviews_api_alerts_rule_create": _op(
        "POST", "/api/alerts/rules", "create_alert_rule", idempotent=False
    ),
    "reviews_api_alerts_rule_update": _op(
        "PATCH", "/api/alerts/rules/{rule_id}", "update_alert_rule"
    ),
    "reviews_api_alerts_rule_delete": _op(
        "DELETE", "/api/alerts/rules/{rule_id}", "delete_alert_rule"
    ),
    "reviews_api_alerts_alerts_get": _op("GET", "/api/alerts", "list_alerts"),
    # OpenTelemetry: the services' default rubrics (the OTLP receiver itself is for exporters)
    "runs_api_otel_list_services": _op("GET", "/api/otel/services", "list_otel_services"),
    "runs_api_otel_set_service": _op("PUT", "/api/otel/services", "set_otel_service"),
    "runs_api_otel_list_rejections": _op("GET", "/api/otel/rejections", "list_otel_rejections"),
}

# Operations a client does not call: OTLP/HTTP is spoken by OpenTelemetry exporters.
NOT_COVERED: dict[str, str] = {
    "runs_api_otel_export_traces": "POST /api/otel/v1/traces: point an OTLP/HTTP exporter at it",
}
