"""The judge seam shares the caller's event loop: it must not change how the loop behaves."""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import ThreadPoolExecutor

from judge_engine import RubricScorer

CRITERIA = '- Mentions "refund"'


def test_blocking_work_sent_to_the_default_executor_still_runs_in_a_worker_thread(judge):
    scorer = RubricScorer(judge, criteria=CRITERIA)

    async def main():
        result = await scorer.ascore(task="t", output="refund")
        loop_thread = threading.get_ident()
        worker = await asyncio.to_thread(threading.get_ident)
        executor = await asyncio.get_running_loop().run_in_executor(None, threading.get_ident)
        return result, loop_thread, worker, executor

    result, loop_thread, worker, executor = asyncio.run(main())
    assert result.passed is True
    assert worker != loop_thread and executor != loop_thread


def test_a_loop_with_its_own_default_executor_keeps_it(judge):
    scorer = RubricScorer(judge, criteria=CRITERIA)
    own = ThreadPoolExecutor(max_workers=2, thread_name_prefix="callers")

    async def main():
        loop = asyncio.get_running_loop()
        loop.set_default_executor(own)
        results = await asyncio.gather(
            *(scorer.ascore(task="t", output="refund") for _ in range(4))
        )
        name = await loop.run_in_executor(None, lambda: threading.current_thread().name)
        return results, name

    results, name = asyncio.run(main())
    assert all(r.passed for r in results)
    assert name.startswith("callers")


def test_many_concurrent_calls_on_one_loop_all_get_their_own_answer(judge, server):
    scorer = RubricScorer(judge, criteria=CRITERIA)
    outputs = [("refund" if i % 2 else "nothing") + f" #{i}" for i in range(40)]

    async def main():
        return await asyncio.gather(*(scorer.ascore(task="t", output=o) for o in outputs))

    results = asyncio.run(main())
    assert [r.passed for r in results] == [bool(i % 2) for i in range(40)]
    assert server.stats()["requests"] == 40


def test_scoring_works_again_on_a_new_event_loop(judge):
    scorer = RubricScorer(judge, criteria=CRITERIA)
    assert [scorer.score(task="t", output="refund").passed for _ in range(3)] == [True] * 3


def test_scoring_again_and_again_from_synchronous_code_leaves_litellm_nothing_to_warn_about(
    judge,
):
    """Each `score()` runs on a fresh loop; litellm must not queue logging work for our calls
    that it would then carry from loop to loop (with a warning each time)."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler(level=logging.WARNING)
    handler.emit = records.append  # type: ignore[method-assign]
    litellm_logger = logging.getLogger("LiteLLM")
    litellm_logger.addHandler(handler)
    try:
        results = [
            RubricScorer(judge, criteria=CRITERIA).score(task="t", output="refund")
            for _ in range(3)
        ]
    finally:
        litellm_logger.removeHandler(handler)
    assert all(r.passed for r in results)
    assert [r.getMessage() for r in records] == []
