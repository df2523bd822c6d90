"""In-process scorers on the caller's own event loop use the direct transport
(judge_engine/direct.py) for an OpenAI-compatible api_base, exactly as a worker does: the same
request, the same answers, the same failures; and every loop's connections close with it.

Which HTTP client sent a request is read at the fake judge (its User-Agent log): aiohttp for
the direct transport, the OpenAI SDK for litellm.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from judge_engine import AlignmentScorer, JudgeError, RubricScorer, TransientJudgeError
from judging.judge_runtime import run_judged

ROOT = Path(__file__).resolve().parents[2]
CRITERIA = '- Mentions "refund"\n- Is polite'
DIRECT, LITELLM = "aiohttp/", "AsyncOpenAI/"


def clients(server) -> set[str]:
    return {DIRECT if DIRECT in a else LITELLM if LITELLM in a else a for a in server.user_agents()}


# --- Which transport ---------------------------------------------------------------------------


def test_ascore_on_the_callers_loop_posts_straight_to_an_openai_compatible_server(judge, server):
    rubric = RubricScorer(judge, criteria=CRITERIA)
    alignment = AlignmentScorer(judge, mode="both")

    async def main():
        return await asyncio.gather(
            rubric.ascore(task="Where?", output="Your refund was sent."),
            alignment.ascore(task="Refund order 7?", output="Refund sent.", system="Be kind."),
        )

    verdicts, aligned = asyncio.run(main())
    assert verdicts.passed is True and aligned.user_score is not None
    assert server.stats()["requests"] == 3 and clients(server) == {DIRECT}
    assert verdicts.usage.prompt_tokens and verdicts.calls[0].latency_ms > 0


def test_transport_litellm_still_goes_through_litellm(judge, server):
    forced = judge.model_copy(update={"transport": "litellm"})
    assert RubricScorer(forced, criteria=CRITERIA).score(task="t", output="refund").passed
    assert clients(server) == {LITELLM}


def test_litellm_options_in_extra_send_the_call_through_litellm(judge, server):
    with_options = judge.model_copy(update={"extra": {"extra_headers": {"X-Team": "a"}}})
    assert RubricScorer(with_options, criteria=CRITERIA).score(task="t", output="refund").passed
    assert clients(server) == {LITELLM}


def test_both_transports_send_the_same_request_body(judge, server):
    configured = judge.model_copy(update={"max_tokens": 300, "extra": {"seed": 7}})
    bodies = []
    for transport in ("auto", "litellm"):
        config = configured.model_copy(update={"transport": transport})
        RubricScorer(config, criteria=CRITERIA).score(task="t", output="refund")
        bodies.append(server.last_request())
    assert clients(server) == {DIRECT, LITELLM}
    # Each request has its own random boundary in its prompt; everything else is the same.
    direct, litellm = (
        re.sub(r"\b[0-9a-f]{32}\b", "B", json.dumps(b, sort_keys=True)) for b in bodies
    )
    assert direct == litellm


def test_score_from_synchronous_code_twice_uses_a_fresh_loop_each_time(judge, server):
    scorer = RubricScorer(judge, criteria=CRITERIA)
    assert [scorer.score(task="t", output="refund").passed for _ in range(2)] == [True, True]
    assert [scorer.score(task="t", output="nothing").passed for _ in range(2)] == [False, False]
    assert server.stats()["requests"] == 4 and clients(server) == {DIRECT}


def test_many_concurrent_calls_on_two_loops_one_after_the_other(judge, server):
    scorer = RubricScorer(judge, criteria=CRITERIA)

    async def main(tag):
        outputs = [("refund" if i % 2 else "nothing") + f" {tag}{i}" for i in range(20)]
        return [r.passed for r in await asyncio.gather(*(scorer.ascore(task="t", output=o)
                                                          for o in outputs))]  # fmt: skip

    expected = [bool(i % 2) for i in range(20)]
    assert asyncio.run(main("a")) == expected and asyncio.run(main("b")) == expected
    assert server.stats()["requests"] == 40 and clients(server) == {DIRECT}


# --- The same failures as the worker -----------------------------------------------------------

FAULTS = [
    ("[[judge:429x1]]", {}),
    ("[[judge:429]]", {"retries": 0}),
    ("[[judge:429:60]]", {}),
    ("[[judge:500x1]]", {}),
    ("[[judge:500]]", {"retries": 1}),
    ("[[judge:400]]", {}),
    ("[[judge:401]]", {}),
    ("[[judge:timeout]]", {"timeout": 0.5, "retries": 0}),
    ("[[judge:malformedx1]]", {}),
    ("[[judge:malformed]]", {}),
    ("[[judge:missing]]", {}),
]
PLACES = {
    "caller's loop": ("auto", asyncio.run),
    "worker loop": ("auto", run_judged),
    "litellm": ("litellm", asyncio.run),
}


def outcome(judge, marker, place):
    """What scoring with `marker` came to: the result or the error, and each call's error."""
    transport, run = PLACES[place]
    config = judge.model_copy(update={"transport": transport})
    scorer = RubricScorer(config, criteria=CRITERIA)
    # The place is in the task so that each place gets its own `xN` fault budget.
    coro = scorer.ascore(task=f"Where? ({place})", output=f"Your refund was sent. {marker}")
    try:
        result = run(coro)
    except JudgeError as exc:
        retry_after = exc.retry_after if isinstance(exc, TransientJudgeError) else None
        return type(exc).__name__, exc.message, retry_after, [c.error for c in exc.calls]
    return "passed", result.passed, None, [c.error for c in result.calls]


@pytest.mark.parametrize(("marker", "settings"), FAULTS, ids=[f[0] for f in FAULTS])
def test_every_fault_comes_out_the_same_on_the_callers_loop_the_worker_loop_and_litellm(
    judge, server, marker, settings
):
    judge = judge.model_copy(update=settings)
    found = {}
    for place in PLACES:
        server.reset()
        found[place] = outcome(judge, marker, place)
        assert clients(server) == ({LITELLM} if place == "litellm" else {DIRECT}), place
    assert found["caller's loop"] == found["worker loop"] == found["litellm"]


def test_a_429_on_the_callers_loop_waits_for_the_retry_after_it_asked_for(judge, server):
    loop_time = []

    async def main():
        loop = asyncio.get_running_loop()
        started = loop.time()
        result = await RubricScorer(judge, criteria=CRITERIA).ascore(
            task="t", output="refund [[judge:429x1]]"
        )
        loop_time.append(loop.time() - started)
        return result

    assert asyncio.run(main()).passed is True
    assert loop_time[0] >= 1.0 and server.stats()["by_fault"] == {"429": 1}


# --- Nothing left open -------------------------------------------------------------------------

# Run in a fresh interpreter with ResourceWarning as an error: an unclosed session, connector,
# socket or event loop (or a callback on a closed loop) is reported on stderr at collection.
LOOPS_SCRIPT = """
import asyncio, gc, sys, weakref
from judge_engine import AlignmentScorer, JudgeConfig, RubricScorer

judge = JudgeConfig(model="openai/fake-judge", api_base=sys.argv[1], api_key="fake")
rubric = RubricScorer(judge, criteria='- Mentions "refund"')
alignment = AlignmentScorer(judge, mode="both")
loops = []

async def both():
    loops.append(weakref.ref(asyncio.get_running_loop()))
    results = await asyncio.gather(*(rubric.ascore(task="t", output="refund") for _ in range(8)))
    aligned = await alignment.ascore(task="Refund?", output="refund", system="Support.")
    return all(r.passed for r in results) and aligned.score is not None

async def untracked():  # a loop that does not track async generators
    sys.set_asyncgen_hooks(firstiter=None, finalizer=None)
    return await both()

def by_hand(shutdown):
    loop = asyncio.new_event_loop()
    ok = loop.run_until_complete(both())
    if shutdown:
        loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()
    return ok

print(asyncio.run(both()), asyncio.run(both()))
print(rubric.score(task="t", output="refund").passed, rubric.score(task="t", output="x").passed)
print(by_hand(shutdown=True), asyncio.run(untracked()))
if sys.argv[2] == "careless":
    print(by_hand(shutdown=False), asyncio.run(both()))
gc.collect()
print("loops alive:", sum(ref() is not None for ref in loops))
"""
LEAK_SIGNS = ("Exception ignored", "ResourceWarning", "Unclosed", "Event loop is closed")


def run_loops_script(server, mode):
    return subprocess.run(
        [sys.executable, "-W", "error::ResourceWarning", "-c", LOOPS_SCRIPT, server.url, mode],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PATH": "/usr/bin"},
    )


@pytest.mark.slow
def test_loops_one_after_another_each_close_their_connections_and_are_freed(server):
    done = run_loops_script(server, "clean")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:4] == [
        "True True",
        "True False",
        "True True",
        "loops alive: 0",
    ]
    assert not [sign for sign in LEAK_SIGNS if sign in done.stderr], done.stderr
    assert clients(server) == {DIRECT}


@pytest.mark.slow
def test_a_loop_closed_without_shutting_down_its_generators_is_still_freed_with_a_warning(server):
    """asyncio.run and asyncio.Runner shut a loop's async generators down; a loop closed by
    hand without that cannot close its connections, and aiohttp says so (which also shows the
    check above can fail). Its pool is dropped when the next loop makes one."""
    done = run_loops_script(server, "careless")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[3:5] == ["True True", "loops alive: 0"]
    assert "Unclosed client session" in done.stderr
