"""Alert rules: each kind fires once per breach, resolves when the condition clears, waits
out its cool-down; deliveries are signed, logged, and a dead receiver is only logged."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from judging.services.budget import budget_update
from judging.services.rescore_webhook import WebhookFailed, webhook_verify
from reviews.models import Alert, AlertDelivery
from reviews.services import override_create
from reviews.services.alert_delivery import alert_deliver
from reviews.services.alerts import AlertRuleError, alert_rule_create, alerts_evaluate
from runs.models import AgentRun, Evaluation, Status
from teams.services import team_webhook_secret_rotate
from tests.http_listener import Listener
from tests.reviews.conftest import FAILING, PASSING


def failure_rule(team, rubric, **kw):
    return alert_rule_create(
        team=team, kind="criterion_failure_rate", rubric=rubric.slug, criterion_key="c2",
        threshold=50, **kw,
    )  # fmt: skip


def test_a_criterion_failure_rate_fires_once_per_breach_and_resolves_when_it_clears(
    team, rubric, judged_run
):
    rule = failure_rule(team, rubric, cooldown_minutes=0)
    failing = [judged_run(output=FAILING), judged_run(output=FAILING)]

    assert alerts_evaluate().fired == 1
    assert alerts_evaluate().fired == 0  # still breached: the same alert stays open

    [alert] = Alert.objects.filter(rule=rule)
    assert alert.resolved_at is None and alert.value == 100.0
    assert sorted(alert.run_ids) == sorted(str(r.pk) for r in failing)
    assert "failing_criterion=c2" in alert.runs_query and "c2" in alert.message
    for _ in range(3):
        judged_run(output=PASSING)  # 2 of 5 fail now: 40 %

    assert alerts_evaluate().resolved == 1
    alert.refresh_from_db()
    assert alert.resolved_at is not None
    assert alerts_evaluate().fired == 0 and Alert.objects.count() == 1


def test_a_rule_that_resolved_does_not_fire_again_within_its_cool_down(team, rubric, judged_run):
    failure_rule(team, rubric, cooldown_minutes=30)
    judged_run(output=FAILING)
    alerts_evaluate()
    for _ in range(2):
        judged_run(output=PASSING)
    alerts_evaluate()  # resolved
    for _ in range(3):
        judged_run(output=FAILING)  # breached again

    assert alerts_evaluate().fired == 0
    assert alerts_evaluate(now=timezone.now() + timedelta(minutes=31)).fired == 1
    assert Alert.objects.count() == 2


def test_a_pass_rate_drop_against_the_previous_window_fires(team, rubric, judged_run):
    alert_rule_create(
        team=team, kind="pass_rate_drop", rubric=rubric.slug, threshold=20, window_hours=24
    )
    earlier = [judged_run(output=PASSING) for _ in range(2)]
    AgentRun.objects.filter(pk__in=[r.pk for r in earlier]).update(
        created_at=timezone.now() - timedelta(hours=30)
    )
    judged_run(output=FAILING)

    assert alerts_evaluate().fired == 1

    alert = Alert.objects.get()
    assert alert.value == 100.0 and "passed=false" in alert.runs_query


def test_judge_errors_above_a_count_fire(team, rubric, make_run):
    alert_rule_create(team=team, kind="judge_errors", rubric=rubric.slug, threshold=1)
    for _ in range(2):
        run = make_run(rubric=rubric.slug)
        Evaluation.objects.filter(run=run).update(status=Status.FAILED, finished_at=timezone.now())

    assert alerts_evaluate().fired == 1

    assert Alert.objects.get().value == 2.0


def test_a_budget_at_80_percent_fires_and_a_raised_budget_resolves_it(team, rubric, judged_run):
    run = judged_run(output=PASSING)
    used = Evaluation.objects.get(run=run)
    tokens = used.prompt_tokens + used.completion_tokens
    alert_rule_create(team=team, kind="budget", threshold=80)
    budget_update(team=team, daily_tokens=tokens)  # 100 % used

    assert alerts_evaluate().fired == 1
    budget_update(team=team, daily_tokens=tokens * 10)  # 10 %
    assert alerts_evaluate().resolved == 1


def test_judge_human_kappa_below_a_threshold_fires(team, rubric, judged_run, reviewer):
    runs = [judged_run(output=PASSING) for _ in range(2)] + [judged_run(output=FAILING)]
    alert_rule_create(team=team, kind="kappa_below", rubric=rubric.slug, threshold=0.4)
    # The reviewers say the opposite of the judge on c2 for every run: kappa -1 or 0.
    for run in runs:
        satisfied = run.passed is False
        override_create(
            run=run, criterion_key="c2", satisfied=satisfied, note="no", reviewer=reviewer
        )

    assert alerts_evaluate().fired == 1

    alert = Alert.objects.get()
    assert "c2" in alert.message and alert.value is not None and alert.value < 0.4


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        (
            {"kind": "criterion_failure_rate", "threshold": 50, "rubric": "support-quality"},
            "criterion_key",
        ),
        (
            {
                "kind": "criterion_failure_rate",
                "threshold": 50,
                "rubric": "support-quality",
                "criterion_key": "c9",
            },
            "criterion_key",
        ),
        ({"kind": "pass_rate_drop", "threshold": 10}, "rubric"),
        ({"kind": "pass_rate_drop", "threshold": 10, "rubric": "nope"}, "rubric"),
        ({"kind": "pass_rate_drop", "threshold": 140, "rubric": "support-quality"}, "threshold"),
        ({"kind": "kappa_below", "threshold": 3, "rubric": "support-quality"}, "threshold"),
        ({"kind": "judge_errors", "threshold": -1, "rubric": "support-quality"}, "threshold"),
        ({"kind": "budget", "threshold": 80, "window_hours": 0}, "window_hours"),
        ({"kind": "budget", "threshold": 80, "webhook_url": "http://127.0.0.1:9/x"}, "webhook_url"),
        ({"kind": "weekly", "threshold": 80}, "kind"),
    ],
)
def test_a_malformed_rule_names_its_field(team, rubric, fields, named, settings):
    settings.EVALSITE_WEBHOOK_ALLOW_PRIVATE = False
    with pytest.raises(AlertRuleError) as refused:
        alert_rule_create(team=team, **fields)

    assert named in refused.value.errors


@pytest.fixture
def listener():
    server = Listener().start()
    yield server
    server.stop()


def fired_alert(team, rubric, judged_run, listener, settings, **kw):
    settings.EVALSITE_WEBHOOK_ALLOW_PRIVATE = True
    failure_rule(team, rubric, webhook_url=f"{listener.url}/hook", **kw)
    judged_run(output=FAILING)
    alerts_evaluate()
    return Alert.objects.get()


def test_a_delivery_is_signed_with_the_teams_webhook_secret_and_logged(
    team, rubric, judged_run, listener, settings
):
    secret = team_webhook_secret_rotate(team=team)
    alert = fired_alert(team, rubric, judged_run, listener, settings)

    assert alert_deliver(alert_id=alert.pk, event="fired") is True

    [seen] = listener.seen
    assert seen.path == "/hook" and seen.headers["x-evalsite-event"] == "alert.fired"
    assert webhook_verify(
        secret=secret, body=seen.body, header=seen.headers["x-evalsite-signature"]
    )
    assert not webhook_verify(
        secret="other", body=seen.body, header=seen.headers["x-evalsite-signature"]
    )
    body = json.loads(seen.body)
    assert body["event"] == "alert.fired" and body["alert"]["id"] == str(alert.pk)
    assert body["alert"]["run_ids"] == alert.run_ids and "/runs/?" in body["alert"]["runs_url"]
    [logged] = AlertDelivery.objects.filter(alert=alert)
    assert logged.ok and logged.status_code == 200 and logged.attempt == 1


def test_a_slack_delivery_is_a_text_message_linking_to_the_runs(
    team, rubric, judged_run, listener, settings
):
    alert = fired_alert(team, rubric, judged_run, listener, settings, webhook_format="slack")

    alert_deliver(alert_id=alert.pk, event="fired")

    body = json.loads(listener.seen[0].body)
    assert set(body) == {"text"} and body["text"].startswith("Alert: criterion c2")
    assert "|runs>" in body["text"]


def test_a_refused_answer_or_a_dead_receiver_is_logged_and_raised_for_a_retry(
    team, rubric, judged_run, listener, settings
):
    alert = fired_alert(team, rubric, judged_run, listener, settings)
    listener.script.append((503, {}, b"busy"))

    with pytest.raises(WebhookFailed):
        alert_deliver(alert_id=alert.pk, event="fired", attempt=1)
    listener.stop()
    with pytest.raises(WebhookFailed):
        alert_deliver(alert_id=alert.pk, event="fired", attempt=2)
    listener.start()  # for the fixture's stop

    first, second = AlertDelivery.objects.filter(alert=alert).order_by("attempt")
    assert first.status_code == 503 and "HTTP 503" in first.error and not first.ok
    assert second.status_code is None and "could not connect" in second.error
