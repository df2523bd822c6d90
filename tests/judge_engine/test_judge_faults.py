"""Judge failures: transient ones are retried, invalid answers repaired, the rest classified.

Faults are injected by markers in the run's text (see tests/fake_judge.py), so each test's
requests are independent of the others'. Waits here are the engine's own retry waits.
"""

from __future__ import annotations

import asyncio
import socket
import time

import pytest

from judge_engine import (
    InvalidJudgeOutput,
    JudgeConfig,
    PermanentJudgeError,
    RubricScorer,
    TransientJudgeError,
)
from judge_engine.judge import complete_json

CRITERIA = '- Mentions "refund"\n- Is polite'


@pytest.fixture(autouse=True, params=["litellm", "worker", "in-process"])
def transport(request, monkeypatch, server):
    """Every fault three times: through litellm (transport="litellm"), and through the direct
    transport (judge_engine/direct.py) both on the worker's shared loop and on the caller's
    own short-lived loop (`score()`), which must all fail the same way. The fake judge's
    User-Agent log shows which HTTP client sent each request."""
    if request.param == "worker":
        from judge_engine import alignment, rubric
        from judging import judge_runtime

        def on_the_worker_loop(make_coro, scorer):
            return judge_runtime.run_judged(make_coro())

        for module in (rubric, alignment):
            monkeypatch.setattr(module, "run_sync", on_the_worker_loop)
    yield request.param
    client = "AsyncOpenAI/" if request.param == "litellm" else "aiohttp/"
    assert all(client in agent for agent in server.user_agents())


@pytest.fixture
def judge(judge, transport):
    return judge.model_copy(update={"transport": "litellm"}) if transport == "litellm" else judge


@pytest.fixture
def run_async(transport):
    """Run a coroutine where the transport under test applies."""
    if transport == "worker":
        from judging.judge_runtime import run_judged

        return run_judged
    return asyncio.run


OUTPUT = "Your refund was sent."


def score(judge, marker="", criteria=CRITERIA, **kwargs):
    return RubricScorer(judge, criteria=criteria).score(
        task="Where?", output=f"{OUTPUT} {marker}", **kwargs
    )


def fails(judge, error, marker, **kwargs):
    with pytest.raises(error) as caught:
        score(judge, marker, **kwargs)
    return caught.value


# --- Transient: retried inside the engine ------------------------------------------------------


def test_a_single_429_is_retried_after_the_retry_after_the_judge_asked_for(judge, server):
    started = time.monotonic()
    result = score(judge, "[[judge:429x1]]")  # Retry-After: 1, longer than any backoff step
    assert time.monotonic() - started >= 1.0
    assert result.passed is True
    assert [c.error is not None for c in result.calls] == [True, False]
    assert server.stats()["by_fault"] == {"429": 1}


def test_a_persistent_429_is_a_transient_error_carrying_retry_after(judge):
    error = fails(judge.model_copy(update={"retries": 0}), TransientJudgeError, "[[judge:429]]")
    assert error.retry_after == 1.0
    assert "429" in error.message and "retry after 1s" in error.message
    assert len(error.calls) == 1 and "429" in error.calls[0].error


def test_a_retry_after_longer_than_the_cap_is_handed_to_the_caller_at_once(judge, server):
    error = fails(judge, TransientJudgeError, "[[judge:429:60]]")  # retries=2 by default
    assert error.retry_after == 60.0
    assert server.stats()["requests"] == 1


def test_retries_stop_after_the_configured_number(judge, server):
    error = fails(judge.model_copy(update={"retries": 1}), TransientJudgeError, "[[judge:500]]")
    assert "server error (500)" in error.message and "gave up after 2 attempts" in error.message
    assert len(error.calls) == 2
    assert server.stats()["requests"] == 2


def test_a_single_500_is_retried_and_then_succeeds(judge):
    result = score(judge, "[[judge:500x1]]")
    assert result.passed is True and len(result.calls) == 2


def test_a_judge_slower_than_the_timeout_is_a_transient_error(judge):
    error = fails(
        judge.model_copy(update={"timeout": 0.5, "retries": 0}),
        TransientJudgeError,
        "[[judge:timeout]]",
    )
    assert "within 0.5s" in error.message
    assert error.retry_after is None and len(error.calls) == 1


def test_a_refused_connection_is_a_transient_error_naming_the_server(judge):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    error = fails(
        judge.model_copy(update={"api_base": closed, "retries": 0}), TransientJudgeError, ""
    )
    assert f"could not reach the judge at {closed}" in error.message


# --- Invalid answers: repaired, then refused; never a pass -------------------------------------


def test_a_malformed_answer_is_repaired_with_a_second_call(judge, server):
    result = score(judge, "[[judge:malformedx1]]")
    assert result.passed is True
    first, repair = result.calls
    assert first.error.startswith("invalid judge output: the answer is not valid JSON")
    assert repair.error is None
    assert repair.messages[2] == {"role": "assistant", "content": first.raw_response}
    assert "not valid JSON" in repair.messages[3]["content"]


def test_a_persistently_malformed_answer_is_invalid_judge_output(judge):
    error = fails(judge, InvalidJudgeOutput, "[[judge:malformed]]")
    assert error.message.startswith(
        "judge output invalid after 2 attempts: the answer is not valid JSON"
    )
    assert len(error.calls) == 2 and all(c.raw_response for c in error.calls)


def test_the_number_of_repairs_is_configurable(judge, server):
    fails(judge.model_copy(update={"repair_retries": 0}), InvalidJudgeOutput, "[[judge:malformed]]")
    assert server.stats()["requests"] == 1


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ("missing", "judge answered no verdict for criterion c2 (Is polite)"),
        ("extra", "judge answered for criterion 'not-asked', which was not asked"),
        ("duplicate", "judge answered twice for criterion c1"),
        ("wrong_type", "satisfied must be true or false, not 'yes'"),
    ],
)
def test_an_incomplete_or_inconsistent_answer_is_never_a_pass(judge, fault, message):
    error = fails(judge, InvalidJudgeOutput, f"[[judge:{fault}]]")
    assert message in error.message


def test_an_empty_verdict_list_for_a_one_criterion_rubric_is_invalid(judge):
    error = fails(judge, InvalidJudgeOutput, "[[judge:missing]]", criteria='- Mentions "refund"')
    assert "no verdict for criterion c1" in error.message


def test_an_incomplete_answer_repaired_once_succeeds(judge):
    assert score(judge, "[[judge:missingx1]]").passed is True


# --- Permanent ---------------------------------------------------------------------------------


def test_a_rejected_api_key_says_how_to_set_one(judge):
    error = fails(judge, PermanentJudgeError, "[[judge:401]]")
    assert error.message.startswith("judge rejected the API key (401) — set EVALSITE_JUDGE_API_KEY")
    assert len(error.calls) == 1


def test_a_bad_request_is_permanent_and_not_retried(judge, server):
    error = fails(judge, PermanentJudgeError, "[[judge:400]]")
    assert not isinstance(error, InvalidJudgeOutput)
    assert "rejected the request (400)" in error.message
    assert server.stats()["requests"] == 1


def test_no_judge_model_is_a_permanent_error_saying_how_to_configure_one():
    with pytest.raises(PermanentJudgeError) as caught:
        RubricScorer(JudgeConfig(model=" "), criteria=CRITERIA).score(task="t", output="o")
    assert caught.value.message.startswith("no judge model configured: set EVALSITE_JUDGE_MODEL")
    assert "EVALSITE_JUDGE_API_BASE" in caught.value.message
    assert caught.value.calls == []


def test_independent_calls_all_finish_before_the_failure_is_raised(judge, server):
    criteria = ['Mentions "refund"', "Is polite [[judge:400]]", 'Says "sent"']
    with pytest.raises(PermanentJudgeError) as caught:
        RubricScorer(judge, criteria=criteria, strategy="independent").score(
            task="t", output=OUTPUT
        )
    assert server.stats()["requests"] == 3
    assert [c.error is None for c in caught.value.calls] == [True, False, True]


# --- The seam itself ---------------------------------------------------------------------------


def test_json_object_mode_puts_the_schema_in_the_system_prompt(judge, server):
    result = score(judge.model_copy(update={"structured_output": "json_object"}))
    body = server.last_request()
    assert body["response_format"] == {"type": "json_object"}
    assert '"verdicts"' in body["messages"][0]["content"]
    assert result.passed is True


def test_an_answer_in_a_json_fence_is_accepted(judge, run_async):
    messages = [{"role": "user", "content": "<task>\nx\n</task>"}]

    async def ask():
        return await complete_json(
            judge,
            messages,
            schema_name="alignment_user",
            schema={},
            validate=lambda data: data["intent"],
        )

    intent, calls = run_async(ask())
    assert intent["score"] == 0.2 and len(calls) == 1


def test_the_request_carries_the_model_schema_and_sampling_parameters(judge, server):
    score(judge.model_copy(update={"temperature": 0.0, "max_tokens": 300, "extra": {"seed": 7}}))
    body = server.last_request()
    assert body["model"] == "fake-judge"  # litellm's provider prefix is not part of the name
    assert body["response_format"]["type"] == "json_schema"
    assert "verdicts" in body["response_format"]["json_schema"]["schema"]["required"]
    assert body["max_tokens"] == 300 and body["temperature"] == 0.0 and body["seed"] == 7


def test_a_judge_with_litellm_options_goes_through_litellm(judge):
    from judge_engine.routes import direct_model
    from judging.judge_runtime import run_judged

    async def route(config):
        return direct_model(config)

    judge = judge.model_copy(update={"transport": "auto"})
    plain = judge.model_copy(update={"extra": {"seed": 7, "top_p": 0.5}})
    with_options = judge.model_copy(update={"extra": {"extra_headers": {"X-Team": "a"}}})
    assert run_judged(route(plain)) == "fake-judge"  # on the worker's loop
    assert run_judged(route(with_options)) is None
    assert run_judged(route(judge.model_copy(update={"transport": "litellm"}))) is None
    assert asyncio.run(route(plain)) == "fake-judge"  # a short-lived loop of the caller's own
    assert asyncio.run(route(with_options)) is None
