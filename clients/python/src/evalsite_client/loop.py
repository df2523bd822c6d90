"""``until_passed``: an agent loop that obeys an evalsite rubric, like Mastra's
``isTaskComplete``. Each step's output is scored; while a required criterion fails, the
judge's ``reason`` goes back to the agent as feedback, until the rubric passes or
``max_steps`` ran out. Every step is stored as a run with ``metadata.loop_id`` (the same for
the whole loop) and ``metadata.loop_step`` (1, 2, ...)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from ._runs import RunsMixin
from .results import LoopResult, ScoreResult

AgentStep = Callable[[str | None], Any]


def run_until_passed(
    client: RunsMixin,
    agent_step: AgentStep,
    *,
    rubric: str | None = None,
    criteria: str | list[dict[str, Any]] | None = None,
    max_steps: int = 5,
    loop_id: str | None = None,
    metadata: dict[str, Any] | None = None,
    **score_fields: Any,
) -> LoopResult:
    """Call ``agent_step(feedback)`` (``feedback`` is None first, then the previous step's
    ``reason``) and score what it returns until the rubric passes or ``max_steps`` steps ran.

    ``agent_step`` returns the output (text or a list of messages), or a run payload dict
    with an ``output`` (and ``input``, ``agent``, ...). ``score_fields`` go to every
    ``client.score`` call (``task=``, ``input=``, ``agent=``, ``timeout=``, ...). A step that
    is still being judged raises ``StillJudging``, a judge failure ``JudgingFailed``: the loop
    never treats either as a pass.
    """
    if max_steps < 1:
        raise ValueError("max_steps must be at least 1")
    loop_id = loop_id or uuid.uuid4().hex
    steps: list[ScoreResult] = []
    feedback: str | None = None
    output: Any = None
    for step in range(1, max_steps + 1):
        output = agent_step(feedback)
        result = client.score(
            run=_as_run(output),
            rubric=rubric,
            criteria=criteria,
            metadata={**(metadata or {}), "loop_id": loop_id, "loop_step": step},
            **score_fields,
        )
        steps.append(result)
        if result.passed:
            break
        feedback = result.reason
    return LoopResult(passed=steps[-1].passed, output=output, steps=steps, loop_id=loop_id)


def _as_run(output: Any) -> dict[str, Any]:
    if isinstance(output, dict) and "output" in output:
        return dict(output)
    return {"output": output}
