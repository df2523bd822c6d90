"""The Python client against the live test server with a real worker and the fake judge:
every operation of /api/openapi.json is in the client's table, and every one is called here.
Plus the agent-loop helpers: score, a 202 surfaced as still judging, until_passed."""

from __future__ import annotations

import json

import httpx
import pytest
from evalsite_client import (
    NOT_COVERED,
    OPERATIONS,
    Client,
    EvalsiteError,
    OverBudget,
    StillJudging,
    until_passed,
)

from tests.clients import pyclient
from tests.clients.pyclient import NOT_PASSING, PASSING, TASK
from tests.conftest import SUPPORT_CRITERIA

evalsite = pyclient.evalsite  # the fixture: a recording client of the live server


def test_every_operation_of_the_live_openapi_schema_is_in_the_clients_table(live_server):
    schema = httpx.get(live_server.url + "/api/openapi.json").json()
    live = {
        op["operationId"]: (method.upper(), path)
        for path, methods in schema["paths"].items()
        for method, op in methods.items()
    }
    table = {op_id: (op.method, op.path) for op_id, op in OPERATIONS.items()}

    assert len(live) > 30
    assert {k: v for k, v in live.items() if k not in NOT_COVERED} == table
    assert set(NOT_COVERED) <= set(live)  # an exclusion names a real operation
    for op in OPERATIONS.values():
        assert callable(getattr(Client, op.client_method)), op.client_method


def test_every_client_method_against_the_live_server(evalsite, worker, team):
    c = evalsite
    _rubrics_and_versions(c)
    _connections_team_and_otel(c)
    run_id = _runs_and_scoring(c)
    _rescoring(c, run_id)
    _reviews_and_calibration(c, run_id)
    _suggested_edits(c, run_id)
    _comparisons_drafts_and_publishing(c, run_id)

    missing = set(OPERATIONS) - c.called
    assert missing == set(), f"operations no test called: {sorted(missing)}"
    assert all(status < 400 for _, status in c.statuses), c.statuses


def _rubrics_and_versions(c) -> None:
    rubric = c.create_rubric(
        "Support quality", slug="support", criteria=SUPPORT_CRITERIA, alignment_mode="user"
    )
    assert rubric["current_version"]["number"] == 1
    assert [r["slug"] for r in c.list_rubrics()["items"]] == ["support"]
    assert c.get_rubric(rubric["id"])["slug"] == "support"
    assert c.update_rubric("support", description="Tickets")["description"] == "Tickets"
    v2 = c.set_criteria(
        "support",
        [*SUPPORT_CRITERIA, {"description": 'Says "sorry"', "required": False}],
        note="apology",
    )
    assert (v2["number"], v2["note"], len(v2["criteria"])) == (2, "apology", 4)
    assert [v["number"] for v in c.list_versions("support")["items"]] == [2, 1]
    assert len(c.get_version("support", 1)["criteria"]) == 3
    spare = c.create_rubric("Spare", criteria="- anything")
    assert c.archive_rubric(spare["slug"])["archived_at"] is not None
    assert [r["slug"] for r in c.iter_rubrics(include_archived=True)] == ["spare", "support"]


def _connections_team_and_otel(c) -> None:
    made = c.create_connection("hosted", "openai/gpt-4o-mini", api_key="sk-test-1234567890")
    assert (made["has_key"], made["key_hint"]) == (True, "7890")
    assert [x["name"] for x in c.list_connections()] == ["hosted"]
    assert c.get_connection("hosted")["id"] == made["id"]
    assert c.update_connection("hosted", params={"temperature": 0})["params"] == {"temperature": 0}
    c.delete_connection("hosted")
    assert c.list_connections() == []
    assert len(c.rotate_webhook_secret()["secret"]) > 20
    invite = c.create_invite("newcomer@example.com", role="viewer")
    assert invite["link"] and [i["email"] for i in c.list_invites()] == ["newcomer@example.com"]
    c.revoke_invite(invite["id"])
    assert c.list_invites() == []
    prices = {"openai/my-judge": {"input": 0.15, "output": 0.6}}
    assert c.update_team_settings(judge_prices=prices)["judge_prices"] == prices
    assert c.get_team_settings()["confirm_tokens_above"] == 200_000
    assert c.set_otel_service("support-agent", "support")[0]["rubric"]["slug"] == "support"
    assert c.list_otel_services()[0]["service_name"] == "support-agent"
    assert c.list_otel_rejections(limit=5) == []  # every trace sent so far made its run
    assert c.set_budget(daily_tokens=10_000_000)["daily_tokens"] == 10_000_000
    assert c.get_budget()["usage"][0]["token_limit"] == 10_000_000
    assert c.get_usage(start="2026-01-01", end="2026-01-31")["days"] == []
    rule = c.create_alert_rule("budget", 80)
    assert [r["id"] for r in c.list_alert_rules()] == [rule["id"]]
    assert c.list_alerts() == []
    changed = c.update_alert_rule(rule["id"], threshold=90, enabled=False)
    assert (changed["threshold"], changed["enabled"]) == (90, False)
    c.delete_alert_rule(rule["id"])


def _runs_and_scoring(c) -> str:
    run = c.create_run(rubric="support", agent="bot", task=TASK, output=PASSING, external_id="t-1")
    again = c.create_run(
        rubric="support", agent="bot", task=TASK, output=PASSING, external_id="t-1"
    )
    assert again["id"] == run["id"]  # idempotent on external_id
    bulk = c.create_runs_bulk(
        [{"rubric": "support", "agent": "bulk", "output": o} for o in (PASSING, NOT_PASSING)]
    )
    assert (bulk["created"], bulk["existing"]) == (2, 0)
    ids = [e["id"] for item in bulk["items"] for e in item["evaluations"] if e["kind"] == "rubric"]
    ended = c.wait_evaluations(ids, timeout=60)
    assert [e["passed"] for e in ended] == [True, False]
    assert c.get_evaluation(ids[1])["verdicts"][1]["satisfied"] is False
    assert {r["agent"] for r in c.list_runs(agent="bulk")["items"]} == {"bulk"}
    assert len(list(c.iter_runs(rubric="support"))) == 3

    result = c.score(PASSING, rubric="support", task=TASK, timeout=60)
    assert (result.passed, result.status, result.score) == (True, "succeeded", 1.0)
    trend = c.get_trend("support", days=7)["series"]  # judged on v2 only: one series
    drafted = c.draft_criteria("You must greet the customer. You should say thanks.")
    assert [(d["description"], d["required"]) for d in drafted] == [
        ("You must greet the customer", True),
        ("You should say thanks", False),
    ]
    assert [s["version"] for s in trend] == [2] and trend[0]["points"][0]["runs"] >= 1
    assert [v["criterion_id"] for v in result.verdicts] == ["c1", "c2", "c3", "c4"]
    assert c.get_run(run["id"])["external_id"] == "t-1"
    exported = [json.loads(line) for line in c.export_runs(agent="bot").splitlines()]
    assert [r["external_id"] for r in exported] == ["t-1"]
    assert "external_id" in c.export_runs(format="csv", agent="bot").splitlines()[0]
    spare = c.create_run(agent="spare", output="Nothing to see.", external_id="spare-1")
    c.delete_run(spare["id"])
    assert c.list_runs(agent="spare")["items"] == []
    return result.run_id


def _rescoring(c, run_id: str) -> None:
    estimate = c.rescore_estimate("support", runs=[run_id])
    assert estimate["runs"] == 1
    batch = c.rescore("support", runs=[run_id], force=True)
    ended = c.wait_batch(batch["id"], poll=0.2, timeout=60)
    assert (ended["status"], ended["counts"]["succeeded"]) == ("completed", 1)
    assert batch["id"] in [b["id"] for b in c.list_batches(rubric="support")["items"]]
    one = c.rescore_run(run_id, force=True)
    assert c.get_batch(one["id"])["total"] == 1
    assert c.cancel_batch(one["id"])["id"] == one["id"]
    c.wait_batch(one["id"], poll=0.2, timeout=60)


def _reviews_and_calibration(c, run_id: str) -> None:
    first = c.create_override(run_id, "c2", False, note="the number is wrong")
    assert (first["created"], first["run"]["passed"]) == (True, False)
    c.revert_override(run_id, first["override"]["id"])
    for key in ("c1", "c2", "c3", "c4"):
        c.create_override(run_id, key, key != "c4")
    review = c.get_review(run_id)
    assert review["reviewed"] and review["effective"]["passed"] is True
    dim = c.create_alignment_override(run_id, "user", "intent", 0.5, note="half")
    c.revert_alignment_override(run_id, dim["override"]["id"])
    assert c.mark_golden(run_id)["golden"] is True
    agreement = c.get_agreement("support")
    assert agreement["version"] == 2 and agreement["criteria"][0]["labelled"] == 1
    assert "c1" in c.export_reviews_csv("support")
    assert {row["criterion_id"] for row in c.export_reviews_jsonl("support")} == {
        "c1",
        "c2",
        "c3",
        "c4",
    }
    golden = c.start_golden_run("support", version=2)
    done = c.wait_calibration(golden["id"], poll=0.2, timeout=60)
    assert done["runs"] == 1 and done["criteria"][0]["agreement"] == 1.0
    check = c.start_consistency_check("support", runs=[run_id], repeats=1)
    assert c.wait_calibration(check["id"], poll=0.2, timeout=60)["progress"]["failed"] == 0
    assert c.get_calibration(check["id"])["kind"] == "consistency"


def _suggested_edits(c, run_id: str) -> None:
    # One reviewer label against the judge is enough with the rubric's own threshold of 1.
    c.create_override(run_id, "c3", False, note="A bare thanks is not gratitude")
    assert c.set_suggestion_threshold("support", 1) == {"min_labels": 1}
    asked = c.suggest_edits("support", criterion_id="c3")["items"][0]
    ready = c.wait_suggestion("support", asked["id"], poll=0.2, timeout=60)
    assert (ready["status"], ready["kind"], ready["evidence"]) == ("ready", "reword", [run_id])
    accepted = c.accept_suggestion("support", ready["id"])
    assert c.wait_comparison(accepted["comparison_id"], poll=0.2, timeout=60)["runs"] == 1
    second = c.suggest_edits("support")["items"][0]
    c.wait_suggestion("support", second["id"], poll=0.2, timeout=60)
    assert c.dismiss_suggestion("support", second["id"])["status"] == "dismissed"
    assert [s["status"] for s in c.list_suggestions("support")["items"]] == [
        "dismissed",
        "accepted",
    ]
    assert c.set_suggestion_threshold("support", None) == {"min_labels": 3}
    c.create_override(run_id, "c3", True)


def _comparisons_drafts_and_publishing(c, run_id: str) -> None:
    sample = {"kind": "runs", "runs": [run_id]}
    assert set(c.comparison_estimate("support", {"version": 1}, sample=sample)) >= {"a", "b"}
    started = c.create_comparison("support", {"version": 1}, sample=sample)
    report = c.wait_comparison(started["id"], poll=0.2, timeout=60)
    assert (report["runs"], report["a"]["version"], report["b"]["version"]) == (1, 2, 1)
    assert run_id in c.export_comparison(started["id"])
    draft = c.create_draft("support", '- Mentions "refund"\n- Says "thanks"', note="shorter")
    assert (draft["published"], len(draft["criteria"])) == (False, 2)
    assert c.set_gate("support", min_agreement=0.5)["gate"]
    c.set_gate("support")  # every bound null: no gate, so publishing is immediate
    assert c.publish_version("support", draft["number"])["state"] == "published"
    assert c.get_rubric("support")["current_version"]["number"] == draft["number"]


# --- Agent loop helpers -----------------------------------------------------------------------


def test_a_score_that_times_out_is_still_judging_with_its_evaluation_ids_never_a_pass(
    evalsite, worker, make_rubric
):
    make_rubric()
    slow = PASSING + " [[latency:3]]"

    with pytest.raises(StillJudging) as raised:
        evalsite.score(slow, rubric="support-quality", task=TASK, timeout=0.3)

    still = raised.value
    assert still.status == 202 and still.judging_status in ("queued", "running")
    run = evalsite.get_run(still.run_id)
    assert sorted(e["id"] for e in run["evaluations"]) == sorted(still.evaluation_ids)
    assert [e["passed"] for e in evalsite.wait_evaluations(still.evaluation_ids, timeout=60)] == [
        True
    ]


def test_an_inline_score_is_judged_by_the_web_process_and_never_queued(
    evalsite, fake_judge, make_rubric
):
    from runs.models import Evaluation

    make_rubric()

    result = evalsite.score(PASSING, rubric="support-quality", task=TASK, timeout=30, inline=True)

    assert result.passed is True and result.verdicts
    evaluation = Evaluation.objects.get(pk=result.evaluation_id)
    assert evaluation.enqueued_at is None and evaluation.attempts == 1  # never sent to a worker


def test_a_stored_score_says_so_with_its_version_and_fresh_re_judges_it(
    evalsite, worker, make_rubric
):
    from rubrics.services import rubric_set_criteria

    rubric = make_rubric()
    ask = dict(rubric="support-quality", task=TASK, timeout=60, external_id="py-fresh")
    first = evalsite.score(PASSING, **ask)
    rubric_set_criteria(rubric=rubric, criteria=[{"description": 'Mentions "voucher"'}])

    again = evalsite.score(PASSING, **ask)
    fresh = evalsite.score(PASSING, fresh=True, **ask)

    assert (first.stored, first.rubric_version, first.passed) == (False, 1, True)
    assert (again.stored, again.rubric_version, again.passed) == (True, 1, True)
    assert (fresh.stored, fresh.rubric_version, fresh.passed) == (False, 2, False)
    assert fresh.run_id == first.run_id and fresh.evaluation_id != first.evaluation_id


def test_a_score_over_the_judge_budget_raises_over_budget_never_a_pass(
    evalsite, worker, team, make_rubric
):
    from judging.services.budget import budget_update

    make_rubric()
    budget_update(team=team, daily_tokens=0)

    with pytest.raises(OverBudget) as raised:
        evalsite.score(PASSING, rubric="support-quality", task=TASK, timeout=30)

    waiting = raised.value
    assert waiting.status == 202 and waiting.judging_status == "over_budget"
    assert "judge budget is reached" in waiting.detail and waiting.evaluation_ids
    assert [e["status"] for e in evalsite.get_run(waiting.run_id)["evaluations"]] == ["over_budget"]


def test_until_passed_feeds_the_reason_back_and_groups_its_runs_by_loop(
    evalsite, worker, make_rubric
):
    make_rubric()
    feedback_seen = []

    def agent_step(feedback):
        feedback_seen.append(feedback)
        return NOT_PASSING if feedback is None else PASSING

    loop = until_passed(
        agent_step, rubric="support-quality", max_steps=4, client=evalsite, task=TASK, timeout=60
    )

    assert loop.passed and loop.output == PASSING and len(loop.steps) == 2
    assert feedback_seen[0] is None and "order number" in feedback_seen[1]
    assert feedback_seen[1] == loop.steps[0].reason
    assert [v["criterion_id"] for v in loop.steps[0].failed_criteria] == ["c2"]
    metadata = [evalsite.get_run(s.run_id)["metadata"] for s in loop.steps]
    assert metadata == [
        {"loop_id": loop.loop_id, "loop_step": 1},
        {"loop_id": loop.loop_id, "loop_step": 2},
    ]


def test_until_passed_stops_after_max_steps_without_a_pass(evalsite, worker, make_rubric):
    make_rubric()

    loop = evalsite.until_passed(
        lambda feedback: {"output": NOT_PASSING, "agent": "stubborn"},
        rubric="support-quality",
        criteria=None,
        max_steps=2,
        task=TASK,
        timeout=60,
    )

    assert not loop.passed and len(loop.steps) == 2 and not loop.last.passed
    assert {evalsite.get_run(s.run_id)["agent"] for s in loop.steps} == {"stubborn"}


def test_api_input_errors_carry_the_apis_message_and_field(evalsite, team):
    with pytest.raises(EvalsiteError) as raised:
        evalsite.score("text", rubric="no-such-rubric", timeout=5)
    assert (raised.value.status, raised.value.field) == (422, "rubric")
    assert "no-such-rubric" in raised.value.message or "rubric" in raised.value.message

    with pytest.raises(EvalsiteError) as raised:
        evalsite.get_run("00000000-0000-0000-0000-000000000000")
    assert raised.value.status == 404
