"""The judge engine: rubric and prompt-alignment scoring with an LLM judge through litellm.

Framework-free: nothing here imports Django. Plain pydantic models go in and come out, so an
agent loop can call the scorers directly:

    judge = JudgeConfig(model="openai/gpt-4o-mini")
    result = await RubricScorer(judge, criteria="- Mentions the refund").ascore(task=..., output=...)
    if not result.passed:
        feed_back_to_agent(result.reason)

The rules that turn verdicts and dimension scores into a result (gating, the perspective mix,
exact sums, bands, the display rounding) are exported too, so a result corrected by hand is computed the way a judged one is.
Helpers the server uses (criteria parsing details, message text extraction, the judge's
routing) are imported from their modules (`judge_engine.text`, `judge_engine.judge`, ...).
"""

from .alignment import AlignmentScorer
from .errors import (
    InvalidJudgeOutput,
    JudgeError,
    PermanentJudgeError,
    ScoringInputError,
    TransientJudgeError,
)
from .examples import Example
from .keys import verdict_key
from .rubric import RubricScorer
from .rules import (
    DIMENSIONS,
    alignment_combine,
    alignment_final,
    band_for,
    display_round,
    perspective_score,
    rubric_passed,
    rubric_score,
)
from .text import parse_criteria
from .types import (
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
    "DIMENSIONS",
    "Example",
    "AlignmentResult",
    "AlignmentScorer",
    "AlignmentWeights",
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
    "alignment_combine",
    "alignment_final",
    "band_for",
    "display_round",
    "parse_criteria",
    "perspective_score",
    "rubric_passed",
    "rubric_score",
    "verdict_key",
]
