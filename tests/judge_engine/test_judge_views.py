"""Judge views: what the prompt holds in each view, the budget cut and its marker, evidence, and
verdict keys that never cross views. Through litellm's real HTTP path to the fake judge."""

from __future__ import annotations

import pytest

from judge_engine import AlignmentScorer, PriorVerdict, RubricScorer
from judge_engine.render import render, run_view
from judge_engine.trajectory import normalise
from tests.fake_judge import boundary_of, section

SYSTEM = "You are a support agent. Never call delete_account."
MESSAGES = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": "Where is the refund for order A17?"},
    {"role": "assistant", "content": "Which email is the order under?"},
    {"role": "user", "content": "ana@example.com"},
]
OUTPUT = [
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "lookup_order", "arguments": '{"order_id": "A17"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "status: refunded on 2026-11-02"},
    {"role": "assistant", "content": "Your refund was issued on 2 November."},
]
CRITERIA = [
    {"id": "lookup", "description": 'Looked the order up with "lookup_order"'},
    {"id": "answer", "description": 'Gives the date ("2 November")'},
]


def prompt_of(server) -> tuple[str, str]:
    """(system message, user message) of the last judge request."""
    body = server.last_request()
    assert body is not None
    return body["messages"][0]["content"], body["messages"][1]["content"]


def blocks(server) -> dict[str, str]:
    body = server.last_request()
    boundary = boundary_of(body["messages"])
    user = body["messages"][1]["content"]
    tags = ("task", "system_prompt", "transcript", "output", "reference")
    return {tag: section(user, tag, boundary) for tag in tags if f"<{tag}-{boundary}>" in user}


def scorer(judge, view, **kwargs):
    return RubricScorer(judge, criteria=CRITERIA, view=view, **kwargs)


def test_final_view_is_the_seed_prompt_first_user_message_system_and_last_answer(judge, server):
    result = scorer(judge, "final").score(messages=MESSAGES, output=OUTPUT)
    seen = blocks(server)
    assert set(seen) == {"task", "system_prompt", "output"}
    assert seen["task"] == "Where is the refund for order A17?"
    assert seen["output"] == "Your refund was issued on 2 November."
    assert "order_id" not in prompt_of(server)[1]  # no tool call reached the judge
    # The judge never saw the tool call: the final answer alone does not mention it.
    assert [v.satisfied for v in result.verdicts] == [False, True]
    assert all(v.evidence == [] for v in result.verdicts)
    assert "evidence" not in str(server.last_request()["response_format"])


def test_conversation_view_shows_every_turn_but_no_tool_call(judge, server):
    scorer(judge, "conversation").score(messages=MESSAGES, output=OUTPUT)
    seen = blocks(server)
    assert set(seen) == {"task", "system_prompt", "transcript", "output"}
    lines = seen["transcript"].splitlines()
    assert lines == [
        "[1] user: Where is the refund for order A17?",
        "[2] assistant: Which email is the order under?",
        "[3] user: ana@example.com",
        "[6] assistant: Your refund was issued on 2 November.",
    ]
    assert "order_id" not in prompt_of(server)[1]  # no tool call reached the judge
    assert "evidence" in str(server.last_request()["response_format"])


def test_trajectory_view_shows_tool_calls_and_results_and_the_judge_cites_steps(judge, server):
    result = scorer(judge, "trajectory").score(messages=MESSAGES, output=OUTPUT)
    transcript = blocks(server)["transcript"]
    assert '[4] tool call lookup_order (call_1): {"order_id": "A17"}' in transcript
    assert "[5] tool result lookup_order (call_1): status: refunded on 2026-11-02" in transcript
    assert SYSTEM not in transcript  # the system prompt has its own block
    lookup, answer = result.verdicts
    assert lookup.satisfied is True and lookup.evidence == [4, 5]
    assert answer.evidence == [6]
    assert result.view == "trajectory" and result.rendering == {}


def test_a_reference_answer_is_shown_in_every_view(judge, server):
    for view in ("final", "conversation", "trajectory"):
        scorer(judge, view).score(
            messages=MESSAGES, output=OUTPUT, expected_output="Refund issued 2 Nov."
        )
        assert blocks(server)["reference"] == "Refund issued 2 Nov."
        assert "reference answer" in prompt_of(server)[0]


def test_out_of_range_citations_are_dropped_and_noted_never_rejected(judge, server):
    criteria = [{"id": "c", "description": "Was polite [[cite:1,99,4]]"}]
    result = RubricScorer(judge, criteria=criteria, view="trajectory").score(
        messages=MESSAGES, output=OUTPUT
    )
    (verdict,) = result.verdicts
    assert verdict.satisfied is True and verdict.evidence == [1, 4]
    assert verdict.evidence_note is not None and "99" in verdict.evidence_note
    assert server.stats()["completions"] == 1  # no repair re-ask for citations


def test_keys_never_cross_views_or_references(judge, server):
    keys = set()
    for view in ("final", "conversation", "trajectory"):
        keys.add(scorer(judge, view).score(messages=MESSAGES, output=OUTPUT).verdicts[0].key)
    ref = scorer(judge, "trajectory").score(messages=MESSAGES, output=OUTPUT, expected_output="x")
    keys.add(ref.verdicts[0].key)
    assert len(keys) == 4


def test_a_stored_verdict_is_reused_only_in_the_view_it_was_given(judge, server):
    first = scorer(judge, "trajectory").score(messages=MESSAGES, output=OUTPUT)
    prior = {
        v.key: PriorVerdict(
            satisfied=v.satisfied, reasoning=v.reasoning, source_id="v1", evidence=v.evidence
        )
        for v in first.verdicts
    }
    server.reset()
    again = scorer(judge, "trajectory").score(messages=MESSAGES, output=OUTPUT, reuse=prior)
    assert server.stats()["completions"] == 0
    assert [v.reused for v in again.verdicts] == [True, True]
    assert again.verdicts[0].evidence == [4, 5]  # citations travel with the reused verdict
    other = scorer(judge, "conversation").score(messages=MESSAGES, output=OUTPUT, reuse=prior)
    assert server.stats()["completions"] == 1
    assert [v.reused for v in other.verdicts] == [False, False]


def test_final_view_keys_are_unchanged_for_texts_given_directly(judge, server):
    """Callers of the text API (and verdicts stored before views existed) keep their keys."""
    from judge_engine import verdict_key

    result = RubricScorer(judge, criteria=CRITERIA).score(
        task="t", output="o 2 November", system="s"
    )
    assert result.verdicts[1].key == verdict_key(
        judge, CRITERIA[1]["description"], "t", "s", "o 2 November"
    )


def long_run(n_pairs: int, result_chars: int = 300):
    output = []
    for i in range(n_pairs):
        output.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": "search", "arguments": f'{{"page": {i}}}'},
                    }
                ],
            }
        )
        output.append({"role": "tool", "tool_call_id": f"c{i}", "content": "r" * result_chars})
    output.append({"role": "assistant", "content": "Final: done."})
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "go"}], output


def test_over_budget_keeps_first_turn_and_latest_steps_and_marks_the_cut():
    messages, output = long_run(60)
    steps = normalise(messages, output)
    shown = render(steps, view="trajectory", budget=2000)
    lines = shown.transcript.splitlines()
    assert lines[0] == "[1] user: go"
    assert lines[1].startswith("[… steps 2–") and "elided:" in lines[1]
    assert lines[-1] == f"[{len(steps) - 1}] assistant: Final: done."
    (cut,) = shown.rendering["elided"]
    assert cut["from"] == 2 and cut["to"] == int(lines[2][1:].split("]")[0]) - 1
    assert cut["steps"] == cut["to"] - cut["from"] + 1
    assert cut["tool_calls"] == sum(
        1 for s in steps[cut["from"] : cut["to"] + 1] if s["kind"] == "tool_call"
    )
    assert f"{cut['steps']} steps, {cut['tool_calls']} tool calls" in lines[1]
    assert shown.rendering["tokens"] <= shown.rendering["budget"] == 2000
    assert shown.task == "go" and shown.system == SYSTEM and shown.output == "Final: done."
    # Elided steps are not steps the judge was shown: they cannot be cited.
    assert cut["from"] not in shown.shown_steps and len(steps) - 1 in shown.shown_steps


def test_long_tool_results_are_shortened_first():
    messages, output = long_run(3, result_chars=30_000)
    steps = normalise(messages, output)
    shown = render(steps, view="trajectory", budget=6000)
    assert shown.rendering["shortened"] == [3, 5, 7]
    assert "characters of this text cut" in shown.transcript
    assert "elided" not in shown.rendering  # shortening alone made it fit
    assert shown.rendering["tokens"] <= 6000


def test_within_budget_nothing_is_cut_or_recorded():
    messages, output = long_run(5)
    shown = run_view(view="trajectory", messages=messages, output=output)
    assert shown.rendering == {}
    assert shown.transcript.count("tool call search") == 5


def test_a_huge_final_answer_in_the_final_view_is_shortened_and_said_so():
    shown = run_view(view="final", task="q", output="word " * 40_000, budget=2000)
    assert shown.rendering["blocks_shortened"] == ["output"]
    assert "characters cut" in shown.output
    assert shown.rendering["tokens"] <= 2000


@pytest.mark.parametrize("bad", ["everything", "", None])
def test_unknown_views_are_refused(judge, bad):
    with pytest.raises(ValueError, match="view must be one of"):
        RubricScorer(judge, criteria=CRITERIA, view=bad)


def test_alignment_in_the_conversation_view_judges_against_every_user_turn(judge, server):
    scorer = AlignmentScorer(judge, mode="user", view="conversation")
    scorer.score(messages=MESSAGES, output=OUTPUT)
    task = blocks(server)["task"]
    assert task == "[1] Where is the refund for order A17?\n\n[3] ana@example.com"
    AlignmentScorer(judge, mode="user").score(messages=MESSAGES, output=OUTPUT)
    assert blocks(server)["task"] == "Where is the refund for order A17?"
