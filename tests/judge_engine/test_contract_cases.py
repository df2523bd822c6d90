"""The scoring-contract cases where the engine and the reference scorers disagreed while the
contract was silent (issue 16): exact sums, display rounding, missing prompts, no output at
all, mapping-like contexts and the order of the judge's answer schemas.

`[[scores:I,R,C,A]]` in a perspective's reference makes the fake judge answer those scores.
"""

from __future__ import annotations

import pytest

from judge_engine import AlignmentScorer, PriorVerdict, RubricScorer, ScoringInputError
from judge_engine.alignment import NO_OUTPUT, NO_OUTPUT_NOTE, USER_NOT_APPLICABLE
from judge_engine.prompts import alignment_schema, rubric_schema
from judge_engine.rubric import NO_OUTPUT_REASONING
from judge_engine.rules import (
    alignment_combine,
    alignment_final,
    display_round,
    perspective_score,
)

PERFECT = "[[scores:1,1,1,1]]"
TASK = f"Explain the refund policy. {PERFECT}"
SYSTEM = f"Be polite. {PERFECT}"
OUTPUT = "Refunds are paid within 14 days."
DIMENSIONS = ("intent", "requirements", "completeness", "appropriateness")


def align(judge, mode="both", task=TASK, system=SYSTEM, output=OUTPUT, **options):
    return AlignmentScorer(judge, mode=mode, **options).score(
        task=task, output=output, system=system
    )


# --- 1. Exact sums, display rounding -------------------------------------------------------------


@pytest.mark.parametrize("mode", ["user", "system", "both"])
def test_a_perfect_alignment_answer_scores_exactly_one_in_every_mode(judge, mode):
    result = align(judge, mode=mode)
    assert result.score == 1.0
    assert result.weighted_score == 1.0
    assert result.display_score == 1.0
    assert all(p.weighted_score == 1.0 for p in result.perspectives.values())


def test_a_perfect_answer_is_one_times_the_scale(judge):
    assert align(judge, scale=10).score == 10.0


def test_a_perfect_answer_scores_one_when_the_other_perspective_is_not_applicable(judge):
    assert align(judge, mode="both", system=None).score == 1.0
    assert align(judge, mode="both", task="").score == 1.0


def test_a_perfect_rubric_answer_scores_exactly_one(judge):
    result = RubricScorer(judge, criteria='- Mentions "refunds"\n- Says it').score(
        task="Refunds?", output="Refunds are paid."
    )
    assert (result.passed, result.score) == (True, 1.0)


def test_every_dimension_at_0_3_sums_to_exactly_0_3(judge):
    result = align(judge, mode="both", task="Q? [[scores:0.3,0.3,0.3,0.3]]", system=None)
    assert result.score == 0.3
    assert sum(0.3 * w for w in (0.4, 0.3, 0.2, 0.1)) != 0.3  # what a naive sum gives


def test_the_weighted_sums_are_exact_and_stored_to_twelve_decimals():
    user = {"intent": 0.4, "requirements": 0.3, "completeness": 0.2, "appropriateness": 0.1}
    system = {"intent": 0.35, "requirements": 0.35, "completeness": 0.15, "appropriateness": 0.15}
    ones = dict.fromkeys(DIMENSIONS, 1.0)
    assert perspective_score(ones, user) == 1.0
    assert perspective_score(ones, system) == 1.0
    assert alignment_combine(1.0, 1.0) == 1.0
    assert alignment_combine(0.9999999999999999, 0.9999999999999998) == 1.0
    assert perspective_score(dict.fromkeys(DIMENSIONS, 1 / 3), user) == 0.333333333333
    assert alignment_final(0.1 + 0.2, 3) == 0.9


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0.625, 0.63),  # Python's round gives 0.62
        (0.125, 0.13),
        (0.675, 0.68),  # the float is 0.67499999…; it was written, and is read, as 0.675
        (2.5, 2.5),
        (0.624999999999, 0.62),
        (0.9999999999999999, 1.0),
        (0.0, 0.0),
        (7.555, 7.56),
    ],
)
def test_display_rounding_is_half_up_to_two_decimals(value, shown):
    assert display_round(value) == shown


def test_display_rounding_leaves_huge_and_non_finite_values_alone():
    assert display_round(1e300) == 1e300
    assert display_round(float("inf")) == float("inf")
    assert display_round(0.5, 0) == 1.0


def test_the_reason_text_rounds_dimensions_half_up(judge):
    result = align(judge, mode="user", task="Q? [[scores:0.625,0.625,0.625,0.625]]")
    assert result.display_score == 0.63
    assert "- Intent (weight 0.40): 0.63 — " in result.reason
    assert "User perspective: 0.63" in result.reason


# --- 2. `both` without a user message -------------------------------------------------------------


def test_both_without_a_user_message_scores_the_system_perspective_alone(judge, server):
    result = align(judge, task="  ", system="Be polite. [[scores:0.5,0.5,1,1]]")
    assert list(result.perspectives) == ["system"]
    assert result.score == 0.65
    assert (result.user_score, result.user_applicable) == (None, False)
    assert (result.system_score, result.system_applicable) == (0.65, True)
    assert USER_NOT_APPLICABLE in result.reason
    assert "Combined as" not in result.reason
    assert server.stats()["requests"] == 1


def test_both_with_neither_a_user_message_nor_a_system_prompt_fails_before_any_call(judge, server):
    with pytest.raises(ScoringInputError, match="no user message and no system prompt"):
        align(judge, task="", system=" ")
    assert server.stats()["requests"] == 0


def test_both_with_both_prompts_marks_both_applicable(judge):
    result = align(judge)
    assert (result.user_applicable, result.system_applicable) == (True, True)


# --- 3. No output at all ---------------------------------------------------------------------------


@pytest.mark.parametrize("output", ["", "   \n", []])
def test_no_output_fails_every_criterion_without_a_judge_call(judge, server, output):
    result = RubricScorer(judge, criteria="- A\n- [optional] B").score(task="Q?", output=output)
    assert (result.passed, result.score) == (False, 0.0)
    assert [(v.satisfied, v.reasoning) for v in result.verdicts] == [
        (False, NO_OUTPUT_REASONING),
        (False, NO_OUTPUT_REASONING),
    ]
    assert NO_OUTPUT_REASONING == "the agent produced no output"
    assert result.calls == [] and server.stats()["requests"] == 0
    assert result.reason.startswith("Rubric not satisfied.")
    assert result.no_output


def test_no_output_does_not_reuse_a_verdict_a_judge_once_gave_on_it(judge, server):
    scorer = RubricScorer(judge, criteria="- A")
    key = scorer.verdict_keys(scorer.criteria, scorer.render(task="Q?", output=""))["c1"]
    reuse = {key: PriorVerdict(satisfied=True, reasoning="looked fine", source_id="old")}
    result = scorer.score(task="Q?", output="", reuse=reuse)
    assert result.passed is False and not result.verdicts[0].reused


def test_no_criteria_still_passes_without_output(judge, server):
    result = RubricScorer(judge).score(task="Q?", output="")
    assert (result.passed, result.criteria_source) == (True, "none")
    assert server.stats()["requests"] == 0


TOOL_ONLY_OUTPUT = [
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "refund", "arguments": '{"order": "1234"}'},
            }
        ],
    }
]
MESSAGES = [{"role": "user", "content": "Refund order 1234"}]


def test_tool_calls_count_as_output_only_in_a_view_that_shows_them(judge, server):
    shown = RubricScorer(judge, criteria="- A", view="trajectory").score(
        messages=MESSAGES, output=TOOL_ONLY_OUTPUT
    )
    assert shown.verdicts[0].reasoning != NO_OUTPUT_REASONING and not shown.no_output
    assert server.stats()["requests"] == 1
    hidden = RubricScorer(judge, criteria="- A", view="conversation").score(
        messages=MESSAGES, output=TOOL_ONLY_OUTPUT
    )
    assert hidden.verdicts[0].reasoning == NO_OUTPUT_REASONING
    assert server.stats()["requests"] == 1


@pytest.mark.parametrize("mode", ["user", "system", "both"])
def test_no_output_scores_every_alignment_dimension_zero_without_a_judge_call(judge, server, mode):
    result = align(judge, mode=mode, output="")
    assert result.score == 0.0 and result.no_output
    assert result.band == "very poor"
    expected = {"user": ["user"], "system": ["system"], "both": ["user", "system"]}[mode]
    assert list(result.perspectives) == expected
    for p in result.perspectives.values():
        assert [getattr(p, d).score for d in DIMENSIONS] == [0.0] * 4
        assert p.intent.reasoning == NO_OUTPUT
        assert p.weighted_score == 0.0
    assert NO_OUTPUT_NOTE in result.reason
    assert result.calls == [] and server.stats()["requests"] == 0


def test_missing_prompts_are_still_an_error_when_there_is_no_output(judge, server):
    with pytest.raises(ScoringInputError):
        align(judge, mode="system", system=None, output="")


# --- 5. Mapping-like request contexts ---------------------------------------------------------------


class RequestContext:
    """The reference framework's request context: a ``get``, no dict."""

    def __init__(self, **values):
        self._values = values

    def get(self, key):
        return self._values.get(key)


def test_a_mapping_like_request_context_supplies_the_rubric_and_the_judge_is_asked(judge, server):
    result = RubricScorer(judge).score(
        task="Q?",
        output="nope [[unsatisfied]]",
        request_context=RequestContext(rubric="- Answers the question"),
    )
    assert result.criteria_source == "request_context"
    assert result.passed is False
    assert server.stats()["requests"] == 1


# --- 6. The judge reasons before it decides ----------------------------------------------------------


def _objects(schema):
    """Every object schema inside ``schema``, with its path."""
    stack = [("", schema)]
    while stack:
        path, node = stack.pop()
        if node.get("type") == "object":
            yield path, node
            for name, child in node["properties"].items():
                stack.append((f"{path}.{name}", child))
        if node.get("type") == "array":
            stack.append((f"{path}[]", node["items"]))


VERDICT_FIELDS = ("satisfied", "score", "fulfilled", "is_addressed", "format_aligned")


def _reasons_first(properties: list[str]) -> bool:
    if "reasoning" not in properties:
        return True
    at = properties.index("reasoning")
    evidence_first = "evidence" not in properties or properties.index("evidence") < at
    verdicts = [properties.index(f) for f in VERDICT_FIELDS if f in properties]
    return evidence_first and all(at < v for v in verdicts)


ANSWER_SCHEMAS = {
    "rubric": rubric_schema(["c1"]),
    "rubric with evidence": rubric_schema(["c1"], evidence=True),
    "alignment": alignment_schema(),
}


@pytest.mark.parametrize("name", list(ANSWER_SCHEMAS))
def test_in_every_answer_schema_the_reasoning_comes_before_the_verdict(name):
    objects = list(_objects(ANSWER_SCHEMAS[name]))
    assert objects  # the walk found the objects
    for path, node in objects:
        properties = list(node["properties"])
        assert _reasons_first(properties), (path, properties)
        assert node["required"] == properties, path  # the same order in `required`


def test_the_property_order_of_every_answer_schema():
    orders = {
        name: {path: list(node["properties"]) for path, node in _objects(schema)}
        for name, schema in ANSWER_SCHEMAS.items()
    }
    assert orders["rubric"][".verdicts[]"] == ["criterion_id", "reasoning", "satisfied"]
    assert orders["rubric with evidence"][".verdicts[]"] == [
        "criterion_id",
        "evidence",
        "reasoning",
        "satisfied",
    ]
    assert orders["rubric"][""] == ["verdicts", "overall_assessment"]
    alignment = orders["alignment"]
    assert alignment[".intent"] == ["primary_intent", "reasoning", "is_addressed", "score"]
    assert alignment[".requirements"] == ["requirements", "score"]
    assert alignment[".requirements.requirements[]"] == ["requirement", "reasoning", "fulfilled"]
    assert alignment[".completeness"] == ["missing_elements", "reasoning", "score"]
    assert alignment[".appropriateness"] == [
        "reasoning",
        "format_aligned",
        "tone_aligned",
        "score",
    ]


def test_the_order_check_would_notice_a_verdict_before_its_reasoning():
    assert not _reasons_first(["criterion_id", "satisfied", "reasoning"])
    assert not _reasons_first(["criterion_id", "reasoning", "evidence", "satisfied"])
    assert not _reasons_first(["score", "missing_elements", "reasoning"])


def test_the_schema_sent_to_the_judge_has_the_reasoning_first(judge, server):
    RubricScorer(judge, criteria="- A").score(task="Q?", output="An answer.")
    sent = server.last_request()["response_format"]["json_schema"]["schema"]
    verdict = sent["properties"]["verdicts"]["items"]["properties"]
    assert list(verdict) == ["criterion_id", "reasoning", "satisfied"]
