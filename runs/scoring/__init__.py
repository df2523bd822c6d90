"""The judge engine: rubric and prompt-alignment scoring with an LLM judge through litellm.

Framework-free: nothing here imports Django. Plain pydantic models go in and come out, so an
agent loop can call the scorers directly:

    judge = JudgeConfig(model="openai/gpt-4o-mini")
    result = await RubricScorer(judge, criteria="- Mentions the refund").ascore(task=..., output=...)
    if not result.passed:
        feed_back_to_agent(result.reason)
"""

from .alignment import AlignmentScorer, band_for
from .errors import (
    InvalidJudgeOutput,
    JudgeError,
    PermanentJudgeError,
    ScoringInputError,
    TransientJudgeError,
)
from .keys import PROMPT_VERSION, verdict_key
from .rubric import RubricScorer
from .text import (
    CriteriaSourceError,
    coerce_criteria,
    count_criteria,
    output_text,
    parse_criteria,
    resolve_criteria,
    system_text,
    task_text,
)
from .types import (
    SYSTEM_WEIGHTS,
    USER_WEIGHTS,
    AlignmentResult,
    AlignmentWeights,
    Criterion,
    JudgeCall,
    JudgeConfig,
    PerspectiveResult,
    PriorVerdict,
    RubricResult,
    Usage,
    Verdict,
    Weights,
)

__all__ = [
    "PROMPT_VERSION",
    "SYSTEM_WEIGHTS",
    "USER_WEIGHTS",
    "AlignmentResult",
    "AlignmentScorer",
    "AlignmentWeights",
    "CriteriaSourceError",
    "Criterion",
    "InvalidJudgeOutput",
    "JudgeCall",
    "JudgeConfig",
    "JudgeError",
    "PerspectiveResult",
    "PermanentJudgeError",
    "PriorVerdict",
    "RubricResult",
    "RubricScorer",
    "ScoringInputError",
    "TransientJudgeError",
    "Usage",
    "Verdict",
    "Weights",
    "band_for",
    "coerce_criteria",
    "count_criteria",
    "output_text",
    "parse_criteria",
    "resolve_criteria",
    "system_text",
    "task_text",
    "verdict_key",
]
