"""The human-adjusted result of a run: pure functions (SCORING.md rules applied to labels).

The judge's verdicts and dimension scores stay where the judge wrote them; these functions
compute what the run's result is once reviewers' labels replace some of them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

DIMENSIONS = ("intent", "requirements", "completeness", "appropriateness")
DEFAULT_USER_SHARE = 0.7


def text_hash(description: str) -> str:
    """The key of a criterion wording: a label answers exactly one wording."""
    return hashlib.sha256(description.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class EffectiveVerdict:
    key: str
    description: str
    required: bool
    judge: bool
    human: bool | None  # None: nobody labelled this wording on this run

    @property
    def satisfied(self) -> bool:
        return self.judge if self.human is None else self.human

    @property
    def overridden(self) -> bool:
        return self.human is not None and self.human != self.judge


def gating_passed(verdicts: Iterable[EffectiveVerdict]) -> bool:
    """SCORING.md gating: the required criteria gate; if none is required, all of them do."""
    items = list(verdicts)
    required = [v for v in items if v.required]
    return all(v.satisfied for v in (required or items))


def rubric_result(verdicts: list[EffectiveVerdict], scale: float) -> dict[str, Any]:
    """passed and score (= scale × passed) from the effective verdicts."""
    passed = gating_passed(verdicts)
    return {"passed": passed, "score": scale * (1 if passed else 0)}


def perspective_score(
    judge: Mapping[str, float], human: Mapping[str, float], weights: Mapping[str, float]
) -> float:
    """Σ dimension score × weight, with a human score replacing the judge's where given."""
    return sum(human.get(d, judge[d]) * float(weights[d]) for d in DIMENSIONS)


def alignment_result(
    perspectives: Mapping[str, float], user_share: float | None, scale: float
) -> float:
    """Final alignment score from the (effective) perspective scores, as the scorer does it:
    ``both`` weighs user and system by the user share; one perspective stands alone."""
    user, system = perspectives.get("user"), perspectives.get("system")
    share = DEFAULT_USER_SHARE if user_share is None else user_share
    if user is not None and system is not None:
        return (share * user + (1 - share) * system) * scale
    only = user if user is not None else system
    return (only or 0.0) * scale
