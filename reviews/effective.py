"""A run's verdicts as reviewers corrected them: which wording a label answers, and the
verdict in effect.

The rules that turn these into a result (gating, score = scale × passed, the perspective mix)
are the engine's own (judge_engine), applied in reviews/services/refresh.py.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass


def text_hash(description: str) -> str:
    """The key of a criterion wording: a label answers exactly one wording."""
    return hashlib.sha256(description.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class EffectiveVerdict:
    key: str
    description: str
    required: bool
    judge: bool
    human: bool | None  # None: nobody labelled this wording on this run, or its reviewers tie
    disputed: bool = False  # reviewers' latest verdicts tie: shown as "disputed"

    @property
    def satisfied(self) -> bool:
        return self.judge if self.human is None else self.human

    @property
    def overridden(self) -> bool:
        return self.human is not None and self.human != self.judge


def majority(votes: Iterable[bool]) -> bool | None:
    """The human label from reviewers' latest verdicts: the verdict most of them gave; None
    when nobody voted or the votes tie (a tie counts as unlabelled)."""
    values = list(votes)
    yes = sum(values)
    no = len(values) - yes
    return None if yes == no else yes > no


def tied(votes: Iterable[bool]) -> bool:
    values = list(votes)
    return bool(values) and majority(values) is None
