"""/api/alerts and the alerts page: scoped to the caller's team, malformed rules a 422 naming
the field, the history linking to the runs that caused an alert."""

from __future__ import annotations

import pytest
from django.urls import reverse

from reviews.models import AlertRule
from reviews.services.alerts import alert_rule_create, alerts_evaluate
from tests.api_client import assert_error, field_locs
from tests.page_helpers import signed_in
from tests.reviews.conftest import FAILING

RULE = {"kind": "criterion_failure_rate", "criterion_key": "c2", "threshold": 50}


def test_a_rule_is_created_listed_and_deleted(api, rubric):
    made = api.post("/alerts/rules", {**RULE, "rubric": rubric.slug})

    assert made.status_code == 201, made.content
    rule = made.json()
    assert rule["rubric_id"] == str(rubric.id) and rule["window_hours"] == 24
    assert [r["id"] for r in api.get("/alerts/rules").json()] == [rule["id"]]
    assert api.send("DELETE", f"/alerts/rules/{rule['id']}").status_code == 204
    assert api.get("/alerts/rules").json() == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**RULE, "threshold": 101}, "threshold"),
        ({**RULE, "criterion_key": ""}, "criterion_key"),
        ({**RULE, "kind": "sometimes"}, "kind"),
        ({**RULE, "webhook_format": "xml"}, "webhook_format"),
        ({**RULE, "window_hours": -3}, "window_hours"),
        ({**RULE, "colour": "red"}, "colour"),
    ],
)
def test_a_malformed_rule_is_a_422_naming_the_field(api, rubric, body, field):
    locs = field_locs(api.post("/alerts/rules", {"rubric": rubric.slug, **body}))

    assert any(loc[0] == "body" and loc[-1] == field for loc in locs), locs


def test_another_teams_rule_and_alerts_are_not_seen(api, other_api, team, rubric, judged_run):
    rule = alert_rule_create(team=team, rubric=rubric.slug, **RULE)
    judged_run(output=FAILING)
    alerts_evaluate()

    assert other_api.get("/alerts").json() == [] and other_api.get("/alerts/rules").json() == []
    assert_error(other_api.send("DELETE", f"/alerts/rules/{rule.id}"), 404)
    [alert] = api.get("/alerts").json()
    assert alert["kind"] == "criterion_failure_rate" and alert["resolved_at"] is None


def test_a_viewer_cannot_add_a_rule(session_api, viewer, rubric):
    assert_error(session_api(viewer).post("/alerts/rules", {**RULE, "rubric": rubric.slug}), 403)


def test_the_alerts_page_lists_an_alert_with_a_link_to_its_runs(owner, team, rubric, judged_run):
    alert_rule_create(team=team, rubric=rubric.slug, **RULE)
    judged_run(output=FAILING)
    alerts_evaluate()

    page = signed_in(owner).get(reverse("reviews:alerts")).content.decode()

    assert "Firing" in page and "criterion c2 of rubric" in page
    assert f"/runs/?rubric={rubric.id}&amp;failing_criterion=c2" in page


def test_an_editor_adds_a_rule_on_the_page_and_a_bad_one_is_refused_naming_the_field(
    teammate, team, rubric
):
    client = signed_in(teammate)
    form = {
        "kind": "judge_errors", "rubric": rubric.slug, "threshold": "3", "window_hours": "24",
        "cooldown_minutes": "60", "webhook_format": "json", "enabled": "on",
    }  # fmt: skip

    added = client.post(reverse("reviews:alert_rule_new"), form)
    refused = client.post(reverse("reviews:alert_rule_new"), {**form, "rubric": ""})

    assert added.status_code == 302
    assert AlertRule.objects.get(team=team).kind == "judge_errors"
    assert refused.status_code == 422 and "this kind needs a rubric" in refused.content.decode()


def test_a_rule_is_changed_by_patch_and_a_bad_change_is_a_422_naming_the_field(api, rubric):
    rule = api.post("/alerts/rules", {**RULE, "rubric": rubric.slug}).json()
    path = f"/alerts/rules/{rule['id']}"

    changed = api.send("PATCH", path, {"threshold": 75, "window_hours": 48})

    assert changed.status_code == 200, changed.content
    body = changed.json()
    assert (body["threshold"], body["window_hours"], body["criterion_key"]) == (75, 48, "c2")
    for bad, field in [({"threshold": 150}, "threshold"), ({"kind": None}, "kind"),
                       ({"criterion_key": "c9"}, "criterion_key"), ({"colour": 1}, "colour")]:  # fmt: skip
        locs = field_locs(api.send("PATCH", path, bad))
        assert any(loc[-1] == field for loc in locs), (bad, locs)
    assert AlertRule.objects.get(pk=rule["id"]).threshold == 75


def test_another_team_cannot_change_a_rule_and_a_viewer_cannot_either(
    api, other_api, session_api, viewer, team, rubric
):
    rule = alert_rule_create(team=team, rubric=rubric.slug, **RULE)

    assert_error(other_api.send("PATCH", f"/alerts/rules/{rule.id}", {"threshold": 1}), 404)
    assert_error(
        session_api(viewer).send("PATCH", f"/alerts/rules/{rule.id}", {"threshold": 1}), 403
    )
    rule.refresh_from_db()
    assert rule.threshold == 50


def test_turning_a_rule_off_resolves_its_open_alert_and_it_is_not_evaluated(
    api, team, rubric, judged_run
):
    rule = alert_rule_create(team=team, rubric=rubric.slug, **RULE)
    judged_run(output=FAILING)
    assert alerts_evaluate().fired == 1

    off = api.send("PATCH", f"/alerts/rules/{rule.id}", {"enabled": False})

    assert off.status_code == 200 and off.json()["enabled"] is False
    [alert] = api.get("/alerts").json()
    assert alert["resolved_at"] is not None
    assert alerts_evaluate().fired == 0


def test_an_editor_edits_a_rule_on_its_page_which_keeps_what_was_typed_on_an_error(
    teammate, team, rubric
):
    rule = alert_rule_create(team=team, rubric=rubric.slug, **RULE)
    client = signed_in(teammate)
    url = reverse("reviews:alert_rule_edit", args=[rule.id])
    form = {
        "kind": "criterion_failure_rate", "rubric": rubric.slug, "criterion_key": "c2",
        "threshold": "65", "window_hours": "12", "cooldown_minutes": "30",
        "webhook_format": "json", "enabled": "on",
    }  # fmt: skip

    shown = client.get(url).content.decode()
    refused = client.post(url, {**form, "threshold": "250"})
    saved = client.post(url, form)

    assert 'value="50.0"' in shown and f'value="{rubric.slug}" selected' in shown
    assert refused.status_code == 422
    assert "must be a percentage from 0 to 100" in refused.content.decode()
    assert 'value="250"' in refused.content.decode() and 'value="12"' in refused.content.decode()
    assert saved.status_code == 302
    rule.refresh_from_db()
    assert (rule.threshold, rule.window_hours, rule.cooldown_minutes) == (65, 12, 30)
