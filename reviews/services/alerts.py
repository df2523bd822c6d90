"""Alert rules: their validation, and their evaluation on a Celery beat schedule.

Each rule is a condition over a window (rubrics' verdicts, pass rates, judge errors,
judge–human kappa from reviews.selectors.agreement, the team's judge budget from
judging.services.budget). Evaluating a rule fires an alert once per breach (one open alert per
rule, ``alert_one_open``), resolves it when the condition clears, and after a resolution does
not fire again for the rule's cool-down. Firing and resolving are told to the rule's webhook
by a Celery task (reviews.services.alert_delivery) after commit: nothing here waits on a
receiver, and scoring never does.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from django.db import IntegrityError, transaction
from django.db.models import Count, Q
from django.utils import timezone

from evalsite.errors import FieldErrors
from evalsite.outbound import Purpose, outbound_field_errors
from judging.services.budget import budget_usage
from rubrics.models import Criterion, Rubric
from runs.models import AgentRun, CriterionVerdict, Evaluation, Status
from runs.selectors.filters import result_passed_q
from runs.selectors.trends import period_versions
from teams.models import Team

from ..models_alerts import Alert, AlertKind, AlertRule, WebhookFormat
from ..selectors.agreement import rubric_agreement
from .alert_delivery import alert_notify

RUNS_SHOWN = 20
MAX_WINDOW_HOURS = 24 * 90


class AlertRuleError(FieldErrors):
    pass


# --- Rules -----------------------------------------------------------------------------------


RULE_FIELDS = (
    "kind",
    "threshold",
    "rubric",
    "criterion_key",
    "window_hours",
    "cooldown_minutes",
    "webhook_url",
    "webhook_format",
    "enabled",
)


def alert_rule_create(
    *,
    team: Team,
    kind: str,
    threshold: float,
    rubric: str | None = None,
    criterion_key: str = "",
    window_hours: int = 24,
    cooldown_minutes: int = 60,
    webhook_url: str = "",
    webhook_format: str = WebhookFormat.JSON,
    enabled: bool = True,
) -> AlertRule:
    """A new rule; a FieldErrors naming each field that is wrong (422)."""
    values = _checked(
        team,
        kind=kind,
        threshold=threshold,
        rubric=rubric,
        criterion_key=criterion_key,
        window_hours=window_hours,
        cooldown_minutes=cooldown_minutes,
        webhook_url=webhook_url,
        webhook_format=webhook_format,
    )
    return AlertRule.objects.create(team=team, enabled=enabled, **values)


def alert_rule_update(*, rule: AlertRule, **changes: Any) -> AlertRule:
    """Change some of a rule's fields (the others keep their values), checked as a new rule
    is. A rule whose condition changed is read afresh by the next evaluation (an open alert
    resolves then if the new condition is clear); a disabled rule's open alert resolves now."""
    unknown = sorted(set(changes) - set(RULE_FIELDS))
    if unknown:
        raise AlertRuleError({name: "is not a field of an alert rule" for name in unknown})
    current = {name: getattr(rule, name) for name in RULE_FIELDS if name != "rubric"}
    current["rubric"] = str(rule.rubric_id) if rule.rubric_id else None
    merged = current | changes
    enabled = bool(merged.pop("enabled"))
    values = _checked(rule.team, **merged)
    for name, value in values.items():
        setattr(rule, name, value)
    rule.enabled = enabled
    with transaction.atomic():
        rule.save()
        if not enabled:
            _resolve_open(rule, timezone.now())
    return rule


def _checked(team: Team, **values: Any) -> dict[str, Any]:
    """The rule's fields as stored (``rubric`` found in the team), or AlertRuleError."""
    kind, threshold = values["kind"], values["threshold"]
    rubric, criterion_key = values["rubric"], values["criterion_key"]
    errors: dict[str, str] = {}
    if kind not in AlertKind.values:
        errors["kind"] = f"must be one of {', '.join(AlertKind.values)}"
    found = _rubric(team, rubric) if rubric else None
    if kind != AlertKind.BUDGET and found is None:
        errors["rubric"] = "no such rubric in this team" if rubric else "this kind needs a rubric"
    errors.update(_threshold_errors(kind, threshold))
    if kind == AlertKind.CRITERION_FAILURE_RATE:
        if not criterion_key:
            errors["criterion_key"] = "this kind needs the key of a criterion (e.g. c1)"
        elif found is not None and not _has_criterion(found, criterion_key):
            errors["criterion_key"] = "the rubric's current version has no such criterion"
    if not 1 <= values["window_hours"] <= MAX_WINDOW_HOURS:
        errors["window_hours"] = f"must be from 1 to {MAX_WINDOW_HOURS}"
    if not 0 <= values["cooldown_minutes"] <= 60 * 24 * 30:
        errors["cooldown_minutes"] = "must be from 0 to 43200 (30 days)"
    if values["webhook_format"] not in WebhookFormat.values:
        errors["webhook_format"] = "must be json or slack"
    errors.update(
        outbound_field_errors(values["webhook_url"], field="webhook_url", purpose=Purpose.WEBHOOK)
    )
    if errors:
        raise AlertRuleError(errors)
    return values | {"rubric": found}


def _rubric(team: Team, ref: str) -> Rubric | None:
    """The team's rubric by id or slug."""
    rubrics = Rubric.objects.filter(team=team)
    try:
        return rubrics.filter(Q(slug=ref) | Q(pk=uuid.UUID(ref))).first()
    except ValueError:  # not an id: a slug only
        return rubrics.filter(slug=ref).first()


def _has_criterion(rubric: Rubric, key: str) -> bool:
    return Criterion.objects.filter(version_id=rubric.current_version_id, key=key).exists()


def _threshold_errors(kind: str, threshold: float) -> dict[str, str]:
    if not math.isfinite(threshold):
        return {"threshold": "must be a number"}
    known: dict[str, tuple[float, float, str]] = {
        AlertKind.KAPPA_BELOW: (-1.0, 1.0, "a kappa from -1 to 1"),
        AlertKind.JUDGE_ERRORS: (0.0, 1e9, "a count, 0 or more"),
    }
    low, high, what = known.get(kind, (0.0, 100.0, "a percentage from 0 to 100"))
    return {} if low <= threshold <= high else {"threshold": f"must be {what}"}


def alert_rule_delete(*, rule: AlertRule) -> None:
    rule.delete()


# --- Conditions ------------------------------------------------------------------------------


@dataclass
class Reading:
    breached: bool
    value: float | None
    message: str
    run_ids: list[str] = field(default_factory=list)
    runs_query: str = ""


def _watched(rule: AlertRule) -> Any:
    """The rubric a rule watches (every kind but budget has one: alert_rule_has_rubric)."""
    return rule.rubric_id


def _since(rule: AlertRule, now: datetime) -> datetime:
    return now - timedelta(hours=rule.window_hours)


def _criterion_failure_rate(rule: AlertRule, now: datetime) -> Reading:
    verdicts = CriterionVerdict.objects.filter(
        team_id=rule.team_id,
        rubric_id=_watched(rule),
        criterion_key=rule.criterion_key,
        is_current=True,
        run_created_at__gte=_since(rule, now),
    )
    counts = verdicts.aggregate(n=Count("id"), failed=Count("id", filter=Q(satisfied=False)))
    rate = 100.0 * counts["failed"] / counts["n"] if counts["n"] else None
    failing = verdicts.filter(satisfied=False).order_by("-run_created_at")
    return Reading(
        breached=rate is not None and rate > rule.threshold,
        value=rate,
        message=f"criterion {rule.criterion_key} of {_name(rule)} failed in "
        f"{_pct(rate)} of {counts['n']} runs in the last {rule.window_hours} h "
        f"(threshold {rule.threshold:g} %)",
        run_ids=[str(r) for r in failing.values_list("run_id", flat=True)[:RUNS_SHOWN]],
        runs_query=urlencode(
            {"rubric": str(rule.rubric_id), "failing_criterion": rule.criterion_key}
        ),
    )


def _pass_rate(rule: AlertRule, start: datetime, end: datetime) -> float | None:
    row = AgentRun.objects.filter(
        result_passed_q(True) | result_passed_q(False),  # runs with a result (run_result)
        team_id=rule.team_id,
        rubric_id=_watched(rule),
        created_at__gte=start,
        created_at__lt=end,
    ).aggregate(n=Count("id"), passed=Count("id", filter=Q(passed=True)))
    return 100.0 * row["passed"] / row["n"] if row["n"] else None


def _pass_rate_drop(rule: AlertRule, now: datetime) -> Reading:
    window = timedelta(hours=rule.window_hours)
    current = _pass_rate(rule, now - window, now)
    previous = _pass_rate(rule, now - 2 * window, now - window)
    drop = previous - current if current is not None and previous is not None else None
    # Two periods judged on different rubric versions: the drop may be the version's doing.
    versions = period_versions(
        team_id=rule.team_id, rubric_id=_watched(rule),
        before=(now - 2 * window, now - window), after=(now - window, now),
    )  # fmt: skip
    failing = AgentRun.objects.filter(
        result_passed_q(False),
        team_id=rule.team_id,
        rubric_id=_watched(rule),
        created_at__gte=now - window,
    )
    return Reading(
        breached=drop is not None and drop > rule.threshold,
        value=drop,
        message=f"pass rate of {_name(rule)} is {_pct(current)} in the last "
        f"{rule.window_hours} h, {_pct(previous)} the {rule.window_hours} h before "
        f"(drop threshold {rule.threshold:g} points)"
        + (f"; {versions.note}" if versions.changed else ""),
        run_ids=[str(r) for r in failing.values_list("id", flat=True)[:RUNS_SHOWN]],
        runs_query=urlencode({"rubric": str(rule.rubric_id), "passed": "false"}),
    )


def _kappa_below(rule: AlertRule, now: datetime) -> Reading:
    rubric = Rubric.objects.select_related("current_version").get(pk=_watched(rule))
    report = rubric_agreement(rubric=rubric, version=rubric.current_version)
    kappas = {
        c.criterion_id: c.stats.kappa
        for c in report.criteria
        if c.stats.kappa is not None
        and (not rule.criterion_key or c.criterion_id == rule.criterion_key)
    }
    low = min(kappas.values()) if kappas else None
    worst = [k for k, v in kappas.items() if v < rule.threshold]
    return Reading(
        breached=bool(worst),
        value=low,
        message=f"judge–human kappa of {_name(rule)} is below {rule.threshold:g} on "
        f"{', '.join(worst) or 'no criterion'} (lowest {low if low is None else round(low, 2)})",
        runs_query=urlencode({"rubric": str(rule.rubric_id)}),
    )


def _judge_errors(rule: AlertRule, now: datetime) -> Reading:
    failed = Evaluation.objects.filter(
        team_id=rule.team_id,
        rubric_id=_watched(rule),
        status=Status.FAILED,
        finished_at__gte=_since(rule, now),
    )
    count = failed.count()
    return Reading(
        breached=count > rule.threshold,
        value=float(count),
        message=f"{count} evaluations of {_name(rule)} failed (judge errors) in the last "
        f"{rule.window_hours} h (threshold {rule.threshold:g})",
        run_ids=[str(r) for r in failed.values_list("run_id", flat=True)[:RUNS_SHOWN]],
        runs_query=urlencode({"rubric": str(rule.rubric_id), "status": "failed"}),
    )


def _budget(rule: AlertRule, now: datetime) -> Reading:
    periods = budget_usage(team=rule.team, now=now)
    used = [
        (p["period"], pct)
        for p in periods
        for pct in (p["token_percent"], p["usd_percent"])
        if pct is not None
    ]
    top = max(used, key=lambda u: u[1], default=None)
    value = top[1] if top else None
    return Reading(
        breached=value is not None and value >= rule.threshold,
        value=value,
        message=f"{_pct(value)} of the {'daily' if top and top[0] == 'day' else 'monthly'} "
        f"judge budget is used (threshold {rule.threshold:g} %)",
        runs_query=urlencode({"status": "over_budget"}),
    )


CONDITIONS = {
    AlertKind.CRITERION_FAILURE_RATE: _criterion_failure_rate,
    AlertKind.PASS_RATE_DROP: _pass_rate_drop,
    AlertKind.KAPPA_BELOW: _kappa_below,
    AlertKind.JUDGE_ERRORS: _judge_errors,
    AlertKind.BUDGET: _budget,
}


def _name(rule: AlertRule) -> str:
    return f"rubric “{rule.rubric.name}”" if rule.rubric else "the team"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f} %"


# --- Evaluation ------------------------------------------------------------------------------


@dataclass
class AlertsReport:
    fired: int = 0
    resolved: int = 0


def alerts_evaluate(*, now: datetime | None = None, team_id: Any = None) -> AlertsReport:
    """Evaluate every enabled rule (of one team when ``team_id``); fire and resolve alerts."""
    now = now or timezone.now()
    report = AlertsReport()
    rules = AlertRule.objects.filter(enabled=True).select_related("rubric", "team")
    if team_id is not None:
        rules = rules.filter(team_id=team_id)
    for rule in rules:
        reading = CONDITIONS[AlertKind(rule.kind)](rule, now)
        outcome = alert_rule_apply(rule=rule, reading=reading, now=now)
        report.fired += outcome == "fired"
        report.resolved += outcome == "resolved"
    return report


def alert_rule_apply(*, rule: AlertRule, reading: Reading, now: datetime) -> str:
    """ "fired", "resolved" or "" (nothing changed) for one rule's reading."""
    open_alert = Alert.objects.filter(rule=rule, resolved_at__isnull=True).first()
    if reading.breached and open_alert is None:
        return "fired" if _fire(rule, reading, now) else ""
    if not reading.breached and open_alert is not None and _resolve_open(rule, now):
        return "resolved"
    return ""


def _resolve_open(rule: AlertRule, now: datetime) -> bool:
    """Resolve the rule's open alert, if any (once: a concurrent evaluation may have), and
    send the webhook's "resolved" after commit."""
    open_alert = Alert.objects.filter(rule=rule, resolved_at__isnull=True).first()
    if open_alert is None:
        return False
    resolved = Alert.objects.filter(pk=open_alert.pk, resolved_at__isnull=True).update(
        resolved_at=now
    )
    if resolved:
        transaction.on_commit(lambda: alert_notify(alert_id=open_alert.pk, event="resolved"))
    return bool(resolved)


def _fire(rule: AlertRule, reading: Reading, now: datetime) -> bool:
    cooled = now - timedelta(minutes=rule.cooldown_minutes)
    if Alert.objects.filter(rule=rule, resolved_at__gt=cooled).exists():
        return False  # resolved moments ago: wait out the cool-down before firing again
    try:
        with transaction.atomic():
            alert = Alert.objects.create(
                team_id=rule.team_id,
                rule=rule,
                value=reading.value,
                message=reading.message,
                run_ids=reading.run_ids,
                runs_query=reading.runs_query,
            )
    except IntegrityError:  # another evaluation fired it first
        return False
    transaction.on_commit(lambda: alert_notify(alert_id=alert.pk, event="fired"))
    return True
