"""What an agent loop reads back from ``Client.score``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .types import Verdict


@dataclass(frozen=True)
class ScoreResult:
    """A whole verdict on one run (``status`` is always ``succeeded``: a timeout raises
    ``StillJudging``, a judge failure ``JudgingFailed``).

    ``passed``: every required criterion holds (an alignment-only score passes only when the
    API says so); ``reason``: which criteria failed and why, one line each, to feed back to
    the agent; ``verdicts``: one per criterion. ``stored``: the run's ``external_id`` was
    scored before and this is that stored result, not judged again (``fresh=True`` re-judges);
    ``rubric_version``: the rubric version the verdict came from (None: inline criteria).
    """

    passed: bool
    score: float | None
    reason: str
    verdicts: list[Verdict]
    status: str
    evaluation_ids: list[str]
    run_id: str
    evaluation_id: str = ""
    alignment: dict[str, Any] | None = None
    stored: bool = False
    rubric_version: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def failed_criteria(self) -> list[Verdict]:
        """The required criteria that do not hold."""
        return [v for v in self.verdicts if v["required"] and not v["satisfied"]]


def score_result(answer: dict[str, Any]) -> ScoreResult:
    return ScoreResult(
        passed=answer.get("passed") is True,
        score=answer.get("score"),
        reason=answer.get("reason") or "",
        verdicts=list(answer.get("verdicts") or []),
        status=str(answer.get("status")),
        evaluation_ids=[str(e) for e in answer.get("evaluation_ids", [])],
        run_id=str(answer.get("run_id", "")),
        evaluation_id=str(answer.get("evaluation_id", "")),
        alignment=answer.get("alignment"),
        stored=answer.get("stored") is True,
        rubric_version=answer.get("rubric_version"),
        raw=answer,
    )


@dataclass(frozen=True)
class LoopResult:
    """What ``until_passed`` ends with: ``passed`` when the last step passed, the last
    ``output``, every step's ``ScoreResult`` in order, and the ``loop_id`` grouping its runs."""

    passed: bool
    output: Any
    steps: list[ScoreResult]
    loop_id: str

    @property
    def last(self) -> ScoreResult:
        return self.steps[-1]
