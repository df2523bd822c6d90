"""The scoring rules of docs/SCORING.md as plain functions over plain values.

The scorers apply them to the judge's answers; reviews applies the very same functions to the
values reviewers corrected (reviews/services/refresh.py), so a human-adjusted result follows
exactly the rules a judged one does: gating, score = scale × passed, the dimension-weighted
perspective score, the user/system mix and the bands. ``run_result`` is the rule for what a
run's result is in each state, which every surface that shows one applies.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Protocol, TypeVar

DIMENSIONS = ("intent", "requirements", "completeness", "appropriateness")
# The user perspective's share of a `both` alignment score unless configured otherwise.
DEFAULT_USER_SHARE = 0.7
# Lower bounds, inclusive: 0.9 is "excellent", 0.8999 "very good".
BANDS: tuple[tuple[float, str], ...] = (
    (0.9, "excellent"),
    (0.8, "very good"),
    (0.7, "good"),
    (0.6, "moderate"),
    (0.4, "poor"),
    (0.0, "very poor"),
)
# Stored scores are exact sums rounded to this many decimals, so a perfect answer is exactly
# 1.0 (never 0.9999999999999999) and 0.3 everywhere is 0.3 (never 0.30000000000000004).
STORED_DECIMALS = 12
# Display rounding (half up) only matters below this size: larger floats carry no decimals.
_DISPLAY_LIMIT = 1e15


class Gated(Protocol):
    """A verdict as gating reads it (the engine's Verdict, a reviewer-corrected verdict, ...)."""

    @property
    def required(self) -> bool: ...

    @property
    def satisfied(self) -> bool: ...


G = TypeVar("G", bound=Gated)


def gating_verdicts(verdicts: Iterable[G]) -> list[G]:
    """The verdicts that gate: the required ones; every verdict when none is required."""
    items = list(verdicts)
    required = [v for v in items if v.required]
    return required or items


def rubric_passed(verdicts: Iterable[Gated]) -> bool:
    """Passed when every gating verdict is satisfied (SCORING.md §1)."""
    return all(v.satisfied for v in gating_verdicts(verdicts))


def rubric_score(passed: bool, scale: float) -> float:
    """scale × 1 when passed, else 0: score == scale exactly when passed."""
    return scale * (1.0 if passed else 0.0)


def stored_score(value: float) -> float:
    """A computed score as it is stored and compared: rounded to STORED_DECIMALS decimals,
    which removes the binary noise of the weighted sum and nothing a person could see."""
    return round(value, STORED_DECIMALS)


def display_round(value: float, digits: int = 2) -> float:
    """``value`` rounded half up to ``digits`` decimals, as people read numbers (and the
    reference shows them): 0.625 shows as 0.63, not Python's half-to-even 0.62.

    The one display rounding of scores: the engine's reason text, the API's display_score,
    the pages' number filters all call it. The decimal digits are the float's shortest repr,
    so 0.675 (stored as 0.67499999999999993…) rounds as the 0.675 it was written as."""
    if not math.isfinite(value) or abs(value) >= _DISPLAY_LIMIT:
        return float(value)
    step = Decimal(1).scaleb(-digits)
    return float(Decimal(repr(float(value))).quantize(step, rounding=ROUND_HALF_UP))


def perspective_score(scores: Mapping[str, float], weights: Mapping[str, float]) -> float:
    """Σ dimension score × its weight over the four dimensions (SCORING.md §2), summed
    exactly (``math.fsum``) and stored to STORED_DECIMALS decimals."""
    return stored_score(math.fsum(scores[d] * float(weights[d]) for d in DIMENSIONS))


def alignment_combine(
    user: float | None, system: float | None, user_share: float | None = None
) -> float:
    """The 0–1 alignment score from the perspective scores that were judged.

    Both: user_share × user + (1 − user_share) × system (None: DEFAULT_USER_SHARE). One
    perspective stands alone; with neither there is nothing to score (0.0).
    """
    share = DEFAULT_USER_SHARE if user_share is None else user_share
    if user is not None and system is not None:
        return stored_score(math.fsum((share * user, (1 - share) * system)))
    only = user if user is not None else system
    return stored_score(only or 0.0)


def alignment_final(weighted: float, scale: float) -> float:
    """The final alignment score: the 0–1 weighted score times the scale, as stored."""
    return stored_score(weighted * scale)


def band_for(score: float) -> str:
    """The band of a 0–1 weighted score.

    Rounded to 9 decimals first, so a sum that is mathematically 0.7 but computes as
    0.69999999999 lands in "good", as a person would expect.
    """
    rounded = round(score, 9)
    return next((label for floor, label in BANDS if rounded >= floor), BANDS[-1][1])


# --- A run's result ---------------------------------------------------------------------------

# The only run status whose result is whole. Every other status (failed: some evaluation failed;
# queued, running, over_budget: not finished; not_sampled, nothing_to_judge: nothing judged)
# answers no result at all, so no surface can read a pass from a result that is not whole.
WHOLE_STATUS = "succeeded"
RESULT_FIELDS = ("passed", "score", "alignment_score")


@dataclass(frozen=True)
class RunResult:
    """A run's result as every surface shows it (API, export, score answers, pages)."""

    status: str
    passed: bool | None
    score: float | None
    alignment_score: float | None
    adjusted: bool = False  # reviewers changed it: it differs from ``judge`` on some value
    judge: Mapping[str, bool | float | None] | None = None  # the judge's own RESULT_FIELDS


def result_whole(status: str) -> bool:
    """Whether a run in ``status`` has a result (the SQL form: status = WHOLE_STATUS)."""
    return status == WHOLE_STATUS


def run_result(
    *,
    status: str,
    passed: bool | None,
    score: float | None,
    alignment_score: float | None,
    judge: Mapping[str, bool | float | None] | None = None,
) -> RunResult:
    """The one rule for a run's result (docs/api.md "A run's result").

    ``passed``, ``score`` and ``alignment_score`` are the run's current (human-adjusted)
    values, ``judge`` the judge's own ones (None: unknown or nothing current). Unless the
    status is succeeded the result is empty: passed, score, alignment_score and judge null,
    adjusted false."""
    if not result_whole(status):
        return RunResult(status, None, None, None)
    mine = {"passed": passed, "score": score, "alignment_score": alignment_score}
    judged = judge if judge and any(judge.get(k) is not None for k in RESULT_FIELDS) else None
    adjusted = judged is not None and any(
        judged.get(k) is not None and judged.get(k) != mine[k] for k in RESULT_FIELDS
    )
    return RunResult(status, passed, score, alignment_score, adjusted, judged)
