"""A team's judge connection checked with one tiny judge call ("Test connection" in team
settings): the same judge a worker would build for it (rubrics.judging.judge_for, so the
connection's own key and address, the private-address guard and the direct transport), one
criterion on a one-word output, no retries, a bounded timeout. Nothing is stored."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from judge_engine import JudgeError, RubricScorer, ScoringInputError
from judge_engine.redact import tenant_error
from judging.judge_runtime import run_judged
from rubrics.judging import judge_for
from runs.models import Evaluation
from teams.models import JudgeConnection

CHECK_CRITERION = 'Says "ok"'


@dataclass(frozen=True)
class ConnectionCheck:
    """What the judge answered (``answer``: its verdict and reason) or why it failed."""

    ok: bool
    answer: str = ""
    error: str = ""
    latency_ms: float | None = None


def connection_check(*, connection: JudgeConnection) -> ConnectionCheck:
    """Ask the connection's judge once whether the output "ok" says "ok"."""
    timeout = min(
        float(connection.params.get("timeout") or settings.EVALSITE_CONNECTION_TEST_TIMEOUT),
        settings.EVALSITE_CONNECTION_TEST_TIMEOUT,
    )
    config = {**connection.params, "model": connection.model, "connection": str(connection.pk)}
    config["timeout"] = timeout
    judge = judge_for(Evaluation(judge_config=config), {str(connection.pk): connection})
    judge = judge.model_copy(update={"retries": 0, "repair_retries": 0})
    scorer = RubricScorer(judge, criteria=[CHECK_CRITERION])
    try:
        result = run_judged(scorer.ascore(task="Say ok.", output="ok"), timeout=timeout + 5)
    except (JudgeError, ScoringInputError) as exc:
        return ConnectionCheck(ok=False, error=tenant_error(str(exc)))
    except TimeoutError:
        return ConnectionCheck(ok=False, error=f"the judge did not answer within {timeout:g} s")
    verdict = result.verdicts[0]
    said = "satisfied" if verdict.satisfied else "not satisfied"
    latency = sum(c.latency_ms for c in result.calls) if result.calls else None
    answer = f"{connection.model} answered: {said}" + (
        f" ({verdict.reasoning[:300]})" if verdict.reasoning else ""
    )
    return ConnectionCheck(ok=True, answer=answer, latency_ms=latency)
