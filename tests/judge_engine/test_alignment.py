"""The prompt alignment scorer: weighted maths, bands, missing prompts, invalid scores.

`[[scores:I,R,C,A]]` in a perspective's reference text (the task for the user perspective, the
system prompt for the system one) makes the fake judge answer exactly those four scores.
"""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from judge_engine import (
    AlignmentScorer,
    AlignmentWeights,
    InvalidJudgeOutput,
    ScoringInputError,
    Weights,
    band_for,
)
from tests.fake_judge import boundary_of, section

TASK = "Explain the refund policy. [[scores:0.9,0.8,0.7,0.6]]"  # user: .36+.24+.14+.06 = 0.80
SYSTEM = "Be polite. [[scores:0.5,0.5,1,1]]"  # system: .175+.175+.15+.15 = 0.65
OUTPUT = "Refunds are paid within 14 days."


def align(judge, mode="both", system=SYSTEM, task=TASK, output=OUTPUT, **options):
    return AlignmentScorer(judge, mode=mode, **options).score(
        task=task, output=output, system=system
    )


def test_user_mode_weights_the_users_dimensions_40_30_20_10(judge, server):
    result = align(judge, mode="user")
    assert math.isclose(result.score, 0.80)
    assert math.isclose(result.user_score, 0.80)
    assert (result.system_score, result.system_applicable) == (None, False)
    assert list(result.perspectives) == ["user"]
    assert server.stats()["requests"] == 1


def test_system_mode_weights_the_system_dimensions_35_35_15_15(judge):
    result = align(judge, mode="system")
    assert math.isclose(result.score, 0.65)
    assert (result.user_score, result.system_applicable) == (None, True)
    assert result.band == "moderate"


def test_both_mode_is_70_percent_user_plus_30_percent_system_each_with_its_own_weights(
    judge, server
):
    result = align(judge)
    assert math.isclose(result.score, 0.7 * 0.80 + 0.3 * 0.65)  # 0.755
    assert math.isclose(result.system_score, 0.65)
    assert result.band == "good"
    assert server.stats()["requests"] == 2


def test_both_mode_without_a_system_prompt_is_the_user_score(judge, server):
    result = align(judge, system="  ")
    assert math.isclose(result.score, 0.80)
    assert (result.system_score, result.system_applicable) == (None, False)
    assert "System perspective not applicable (no system prompt)" in result.reason
    assert server.stats()["requests"] == 1


def test_the_final_score_is_scaled_and_rounded_only_for_display(judge):
    result = align(judge, scale=10)
    assert math.isclose(result.score, 7.55)
    assert result.display_score == 7.55
    assert math.isclose(result.weighted_score, 0.755)
    assert align(judge, scale=0).score == 0.0


def test_custom_weights_and_user_share_are_applied(judge):
    weights = AlignmentWeights(
        user=Weights(intent=1, requirements=0, completeness=0, appropriateness=0), user_share=0.5
    )
    result = align(judge, weights=weights)
    assert math.isclose(result.score, 0.5 * 0.9 + 0.5 * 0.65)
    assert result.perspectives["user"].weights.intent == 1


def test_every_dimension_and_its_weight_are_kept_for_display(judge):
    user = align(judge).perspectives["user"]
    assert [
        user.intent.score,
        user.requirements.score,
        user.completeness.score,
        user.appropriateness.score,
    ] == [0.9, 0.8, 0.7, 0.6]
    assert user.weights == Weights()
    assert math.isclose(user.weighted_score, 0.80)


def test_the_weights_of_a_perspective_must_sum_to_one():
    with pytest.raises(ValidationError, match="must sum to 1, not 1.1"):
        Weights(intent=0.5, requirements=0.3, completeness=0.2, appropriateness=0.1)
    assert Weights(intent=0.25, requirements=0.25, completeness=0.25, appropriateness=0.25 + 1e-9)


@pytest.mark.parametrize(
    "bad", [{"intent": -0.1, "requirements": 0.5}, {"intent": 1.2, "requirements": -0.4}]
)
def test_each_weight_must_lie_in_0_to_1(bad):
    with pytest.raises(ValidationError):
        Weights(**{"completeness": 0.4, "appropriateness": 0.2} | bad)


def test_the_user_share_must_lie_in_0_to_1():
    with pytest.raises(ValidationError):
        AlignmentWeights(user_share=1.5)
    assert AlignmentWeights.model_validate({"user_share": 1}).system.intent == 0.35


@pytest.mark.parametrize(
    ("score", "band"),
    [
        (1.0, "excellent"),
        (0.9, "excellent"),
        (0.8999, "very good"),
        (0.8, "very good"),
        (0.7999, "good"),
        (0.7, "good"),
        (0.6, "moderate"),
        (0.5999, "poor"),
        (0.4, "poor"),
        (0.3999, "very poor"),
        (0.0, "very poor"),
        (0.1 * 7, "good"),  # 0.7000000000000001
        (0.36 + 0.24 + 0.14 + 0.06, "very good"),  # 0.7999999999999999
    ],
)
def test_bands_include_their_lower_bound(score, band):
    assert band_for(score) == band


def test_a_score_outside_0_to_1_is_invalid_judge_output_never_clamped(judge):
    with pytest.raises(InvalidJudgeOutput, match="less than or equal to 1") as caught:
        align(judge, mode="user", output=f"{OUTPUT} [[judge:out_of_range]]")
    assert len(caught.value.calls) == 2


def test_an_out_of_range_answer_repaired_once_is_used(judge):
    result = align(judge, mode="user", output=f"{OUTPUT} [[judge:out_of_rangex1]]")
    assert math.isclose(result.score, 0.80) and len(result.calls) == 2


def test_a_score_given_as_text_is_invalid(judge):
    with pytest.raises(InvalidJudgeOutput, match="intent.score"):
        align(judge, mode="user", output=f"{OUTPUT} [[judge:wrong_type]]")


def test_user_mode_without_a_user_message_fails_before_any_call(judge, server):
    with pytest.raises(ScoringInputError, match="no user message"):
        align(judge, mode="user", task="  ")
    assert server.stats()["requests"] == 0


def test_system_mode_without_a_system_prompt_fails_before_any_call(judge, server):
    with pytest.raises(ScoringInputError, match="has none"):
        align(judge, mode="system", system=None)
    assert server.stats()["requests"] == 0


def test_the_system_perspective_is_shown_the_system_prompt_and_the_user_one_is_not(judge):
    result = align(judge)
    user_call, system_call = result.calls
    assert "<system_prompt-" not in user_call.messages[1]["content"]
    boundary = boundary_of(system_call.messages)
    assert section(system_call.messages[1]["content"], "system_prompt", boundary) == SYSTEM
    assert "SYSTEM PROMPT" in system_call.messages[0]["content"]


def test_the_reason_gives_score_band_each_weighted_dimension_and_the_gaps(judge):
    result = align(
        judge,
        task="Explain the refund policy. Mention the deadline.",
        system=None,
        output="Refund policy explained.",
    )
    reason = result.reason.splitlines()
    assert reason[0].startswith(
        f"Alignment score {result.display_score:g} out of 1 ({result.band};"
    )
    assert any(line.startswith("- Intent (weight 0.40): 0.90 — ") for line in reason)
    assert any(line.startswith("- Appropriateness (weight 0.10): 0.80 — ") for line in reason)
    assert "- Unmet requirement: Mention the deadline — the output barely touches it" in reason
    assert "- Missing: Mention the deadline" in reason
    assert reason[-1].startswith("System perspective not applicable (no system prompt)")


def test_the_reason_of_both_modes_shows_how_the_perspectives_combine(judge):
    assert "Combined as 0.70 × user 0.80 + 0.30 × system 0.65." in align(judge).reason


def test_an_unknown_mode_is_rejected(judge):
    with pytest.raises(ValueError, match="mode"):
        AlignmentScorer(judge, mode="agent")
