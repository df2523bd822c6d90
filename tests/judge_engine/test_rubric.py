"""The rubric scorer against the fake judge, through litellm's real HTTP path."""

from __future__ import annotations

import asyncio

import pytest

from judge_engine import (
    Criterion,
    PriorVerdict,
    RubricScorer,
    ScoringInputError,
    verdict_key,
)
from tests.fake_judge import asked_criteria, boundary_of, section

SUPPORT = [
    {"description": 'Mentions "refund"'},
    {"description": 'Gives the "order number"'},
    {"description": 'Says "thanks"', "required": False},
]
TASK = "Where is my refund for order 1234?"
GOOD = "Your refund for order number 1234 was sent today, thanks for waiting."
NO_THANKS = "Your refund for order number 1234 was sent today."
NO_ORDER = "Your refund was sent today, thanks."


def score(judge, criteria=SUPPORT, output=GOOD, **kwargs):
    options = {k: kwargs.pop(k) for k in ("scale", "strategy") if k in kwargs}
    return RubricScorer(judge, criteria=criteria, **options).score(
        task=TASK, output=output, **kwargs
    )


def test_a_run_meeting_every_criterion_passes_with_score_one(judge):
    result = score(judge)
    assert (result.passed, result.score) == (True, 1.0)
    assert [v.satisfied for v in result.verdicts] == [True, True, True]
    assert result.criteria_source == "configured"


def test_a_failed_required_criterion_fails_the_rubric(judge):
    result = score(judge, output=NO_ORDER)
    assert (result.passed, result.score) == (False, 0.0)
    assert [v.satisfied for v in result.verdicts] == [True, False, True]


def test_a_failed_optional_criterion_does_not_gate(judge):
    result = score(judge, output=NO_THANKS)
    assert result.passed is True
    assert result.verdicts[2].satisfied is False


def test_when_no_criterion_is_required_every_criterion_gates(judge):
    optional = [{"description": d["description"], "required": False} for d in SUPPORT]
    assert score(judge, criteria=optional).passed is True
    assert score(judge, criteria=optional, output=NO_THANKS).passed is False


@pytest.mark.parametrize(("scale", "passed_score"), [(0, 0.0), (2.5, 2.5), (1, 1.0)])
def test_the_score_is_scale_times_pass(judge, scale, passed_score):
    assert score(judge, scale=scale).score == passed_score
    assert score(judge, scale=scale, output=NO_ORDER).score == 0.0


def test_a_scale_of_zero_still_reports_passed(judge):
    result = score(judge, scale=0)
    assert (result.passed, result.score) == (True, 0.0)
    assert result.reason.startswith("Rubric satisfied")


@pytest.mark.parametrize("scale", [-1, float("nan"), float("inf"), "2", True])
def test_a_negative_or_non_numeric_scale_is_rejected(judge, scale):
    with pytest.raises(ValueError, match="scale"):
        RubricScorer(judge, criteria=SUPPORT, scale=scale)


def test_no_criteria_anywhere_passes_without_a_judge_call(judge, server):
    result = RubricScorer(judge, scale=3).score(
        task=TASK, output=GOOD, request_context={}, metadata={}
    )
    assert (result.passed, result.score, result.criteria_source) == (True, 3.0, "none")
    assert result.reason.startswith("No rubric applied")
    assert result.calls == [] and result.verdicts == []
    assert server.stats()["requests"] == 0


def test_without_configured_criteria_the_runs_own_rubric_is_used(judge):
    result = RubricScorer(judge).score(
        task=TASK,
        output=GOOD,
        request_context={"rubric": " "},
        metadata={"rubric": '- Says "thanks"'},
    )
    assert result.criteria_source == "metadata"
    assert [v.description for v in result.verdicts] == ['Says "thanks"']


def test_an_invalid_rubric_in_the_run_is_a_scoring_input_error(judge, server):
    with pytest.raises(ScoringInputError, match="request context"):
        RubricScorer(judge).score(task=TASK, output=GOOD, request_context={"rubric": 7})
    assert server.stats()["requests"] == 0


def test_batched_asks_all_criteria_in_one_call(judge, server):
    result = score(judge)
    assert len(result.calls) == 1
    assert server.stats() | {"by_fault": {}} == {
        "requests": 1,
        "max_in_flight": 1,
        "completions": 1,
        "criteria_judged": 3,
        "by_fault": {},
        "max_in_flight_by": {"": 1},  # untagged requests
    }


def test_independent_asks_one_call_per_criterion(judge, server):
    result = score(judge, strategy="independent", output=NO_ORDER)
    assert len(result.calls) == 3
    assert server.stats()["requests"] == 3
    assert [v.satisfied for v in result.verdicts] == [True, False, True]
    assert result.passed is False


def test_the_request_asks_for_a_strict_json_schema_naming_the_asked_ids(judge, server):
    score(judge)
    body = server.last_request()
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["strict"] is True
    item = fmt["json_schema"]["schema"]["properties"]["verdicts"]["items"]
    assert item["properties"]["criterion_id"]["enum"] == ["c1", "c2", "c3"]
    assert body["model"] == "fake-judge" and body["temperature"] == 0.0


def test_the_prompt_lists_each_criterion_on_its_own_id_line(judge):
    criteria = [
        {"description": 'Mentions\n"refund"'},
        {"description": "Is polite", "required": False},
    ]
    call = score(judge, criteria=criteria).calls[0]
    prompt, boundary = call.messages[1]["content"], boundary_of(call.messages)
    lines = section(prompt, "criteria", boundary).splitlines()
    assert lines == [
        '{"id": "c1", "criterion": "Mentions \\"refund\\""}',
        '{"id": "c2", "criterion": "Is polite"}',
    ]
    assert section(prompt, "output", boundary) == GOOD


def test_the_call_is_recorded_with_prompt_answer_tokens_and_latency(judge):
    result = score(judge)
    (call,) = result.calls
    assert call.model == "openai/fake-judge"
    assert [m["role"] for m in call.messages] == ["system", "user"]
    assert '"criterion_id": "c1"' in call.raw_response
    assert call.prompt_tokens > 0 and call.completion_tokens > 0
    assert call.latency_ms > 0 and call.error is None
    assert call.cost is None  # litellm has no price for the fake model
    assert (result.usage.calls, result.usage.cost) == (1, None)
    assert result.usage.prompt_tokens == call.prompt_tokens


def test_ids_unsafe_for_the_prompt_are_relabelled_and_mapped_back(judge, server):
    criteria = [
        Criterion(id="tone check", description='Says "thanks"'),
        Criterion(id="[x]", description="Is fine"),
    ]
    result = score(judge, criteria=criteria)
    assert [v.criterion_id for v in result.verdicts] == ["tone check", "[x]"]
    body = server.last_request()
    asked = asked_criteria(body["messages"][1]["content"], boundary_of(body["messages"]))
    assert asked == [("k1", 'Says "thanks"'), ("k2", "Is fine")]


def test_required_and_description_come_from_configuration_not_the_judge(judge):
    result = score(judge, criteria=[{"description": 'Says "thanks"', "required": False}])
    (verdict,) = result.verdicts
    assert (verdict.description, verdict.required) == ('Says "thanks"', False)


# --- Reason text -------------------------------------------------------------------------------


def test_the_reason_of_a_pass_has_a_header_and_one_line_per_criterion(judge):
    lines = score(judge, output=NO_THANKS).reason.splitlines()
    assert lines[0] == "Rubric satisfied: 2 of 2 required criteria met."
    assert lines[1] == '✓ (required) Mentions "refund" — output mentions "refund"'
    assert lines[3] == '✗ (optional) Says "thanks" — output never mentions "thanks"'
    assert lines[4] == "Overall assessment: 2 of 3 criteria met"
    assert not any("not met" in line for line in lines)


def test_the_reason_of_a_fail_counts_the_unmet_required_criteria(judge):
    lines = score(judge, output="Nothing useful.", scale=10).reason.splitlines()
    assert lines[0] == "Rubric not satisfied."
    assert lines[2].startswith('✗ (required) Gives the "order number" — ')
    assert lines[-1] == "2 of 2 required criteria not met."


def test_the_reason_of_an_all_optional_rubric_counts_criteria_not_required_ones(judge):
    criteria = [{"description": 'Says "thanks"', "required": False}]
    lines = score(judge, criteria=criteria, output=NO_THANKS).reason.splitlines()
    assert lines[0] == "Rubric not satisfied."
    assert (
        lines[-1]
        == "1 of 1 criterion not met (none is marked required, so every criterion counts)."
    )


# --- Reuse -------------------------------------------------------------------------------------


def prior(judge, description, satisfied=True, source="v-1"):
    key = verdict_key(judge, description, TASK, None, GOOD)
    return key, PriorVerdict(satisfied=satisfied, reasoning="judged earlier", source_id=source)


def test_reused_verdicts_are_not_sent_to_the_judge(judge, server):
    reuse = dict(
        [prior(judge, 'Mentions "refund"'), prior(judge, 'Says "thanks"', satisfied=False)]
    )
    result = score(judge, reuse=reuse)
    assert server.stats()["criteria_judged"] == 1
    assert [(v.reused, v.reused_from) for v in result.verdicts] == [
        (True, "v-1"),
        (False, None),
        (True, "v-1"),
    ]
    assert (
        result.verdicts[2].satisfied is False and result.verdicts[2].reasoning == "judged earlier"
    )
    assert "[c1]" not in result.calls[0].messages[1]["content"]


def test_when_every_verdict_is_reused_there_is_no_judge_call(judge, server):
    reuse = dict(prior(judge, d["description"], satisfied=False) for d in SUPPORT)
    result = score(judge, reuse=reuse)
    assert server.stats()["requests"] == 0
    assert result.calls == [] and result.passed is False


def test_a_verdict_keyed_for_another_output_is_not_reused(judge, server):
    stale = {
        verdict_key(judge, 'Mentions "refund"', TASK, None, "old output"): PriorVerdict(
            satisfied=False, reasoning="old", source_id="v-0"
        )
    }
    result = score(judge, reuse=stale)
    assert not any(v.reused for v in result.verdicts)
    assert server.stats()["criteria_judged"] == 3


def test_verdict_keys_on_results_match_verdict_key(judge):
    result = score(judge, system="Be polite.")
    assert result.verdicts[0].key == verdict_key(
        judge, 'Mentions "refund"', TASK, "Be polite.", GOOD
    )


# --- Sync and async entry points ---------------------------------------------------------------


def test_ascore_can_be_awaited_and_score_refuses_inside_a_running_loop(judge):
    scorer = RubricScorer(judge, criteria=SUPPORT)

    async def inside_a_loop():
        result = await scorer.ascore(task=TASK, output=GOOD)
        with pytest.raises(RuntimeError, match="ascore"):
            scorer.score(task=TASK, output=GOOD)
        return result

    assert asyncio.run(inside_a_loop()).passed is True


def test_an_unknown_strategy_is_rejected(judge):
    with pytest.raises(ValueError, match="strategy"):
        RubricScorer(judge, criteria=SUPPORT, strategy="parallel")
