"""A pass-rate drop compares two periods; when their runs were judged on different rubric
versions the alert says so, in its message, its webhook payload and on the alerts page."""

from __future__ import annotations

from datetime import timedelta

from django.urls import reverse
from django.utils import timezone

from reviews.models import Alert
from reviews.services.alert_delivery import alert_payload
from reviews.services.alerts import alert_rule_create, alerts_evaluate
from rubrics.services import rubric_set_criteria
from runs.models import AgentRun
from tests.page_helpers import signed_in
from tests.reviews.conftest import FAILING, PASSING

NOTE = "v1 → v2 changed between these periods"


def drop_rule(team, rubric):
    return alert_rule_create(
        team=team, kind="pass_rate_drop", rubric=rubric.slug, threshold=20, window_hours=24
    )


def backdate(runs, hours: int = 30) -> None:
    AgentRun.objects.filter(pk__in=[r.pk for r in runs]).update(
        created_at=timezone.now() - timedelta(hours=hours)
    )


def test_a_drop_across_a_version_change_says_which_versions_judged_each_period(
    team, rubric, judged_run, owner
):
    drop_rule(team, rubric)
    backdate([judged_run(output=PASSING) for _ in range(2)])  # the previous window, on v1
    rubric_set_criteria(rubric=rubric, criteria='- Says "thanks"')
    judged_run(output=FAILING)  # the last 24 h, on v2

    assert alerts_evaluate().fired == 1

    alert = Alert.objects.get()
    assert alert.value == 100.0
    assert alert.message.endswith(
        f"; {NOTE} (the pass rates are from different rubric versions)"
    ), alert.message
    assert NOTE in alert_payload(alert, "fired")["alert"]["message"]
    page = signed_in(owner).get(reverse("reviews:alerts")).content.decode()
    assert NOTE in page


def test_a_drop_on_one_version_says_nothing_of_versions(team, rubric, judged_run):
    drop_rule(team, rubric)
    backdate([judged_run(output=PASSING) for _ in range(2)])
    judged_run(output=FAILING)

    assert alerts_evaluate().fired == 1

    message = Alert.objects.get().message
    assert "changed between these periods" not in message and "→" not in message
