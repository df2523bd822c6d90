"""The scoring rules of docs/SCORING.md as plain functions over plain values.

The scorers apply them to the judge's answers; reviews applies the very same functions to the
values reviewers corrected (reviews/services/refresh.py), so a human-adjusted result follows
exactly the rules a judged one does: gating, score = scale × passed, the dimension-weighted
perspective score, the user/system mix and the bands.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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


def perspective_score(scores: Mapping[str, float], weights: Mapping[str, float]) -> float:
    """Σ dimension score × its weight over the four dimensions, unrounded (SCORING.md §2)."""
    return sum(scores[d] * float(weights[d]) for d in DIMENSIONS)


def alignment_combine(
    user: float | None, system: float | None, user_share: float | None = None
) -> float:
    """The 0–1 alignment score from the perspective scores that were judged.

    Both: user_share × user + (1 − user_share) × system (None: DEFAULT_USER_SHARE). One
    perspective stands alone; with neither there is nothing to score (0.0).
    """
    share = DEFAULT_USER_SHARE if user_share is None else user_share
    if user is not None and system is not None:
        return share * user + (1 - share) * system
    only = user if user is not None else system
    return only or 0.0


def band_for(score: float) -> str:
    """The band of a 0–1 weighted score.

    Rounded to 9 decimals first, so a sum that is mathematically 0.7 but computes as
    0.69999999999 lands in "good", as a person would expect.
    """
    rounded = round(score, 9)
    return next((label for floor, label in BANDS if rounded >= floor), BANDS[-1][1])
