"""The scoring rules as functions (judge_engine/rules.py): what the scorers and reviews share."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from judge_engine import (
    DIMENSIONS,
    AlignmentWeights,
    Verdict,
    alignment_combine,
    perspective_score,
    rubric_passed,
    rubric_score,
)


@dataclass(frozen=True)
class Mark:
    required: bool
    satisfied: bool


def test_a_failed_required_criterion_fails_the_rubric_whatever_the_optional_ones_say():
    assert rubric_passed([Mark(True, True), Mark(False, False)]) is True
    assert rubric_passed([Mark(True, False), Mark(False, True)]) is False


def test_with_no_required_criterion_every_criterion_gates():
    assert rubric_passed([Mark(False, True), Mark(False, True)]) is True
    assert rubric_passed([Mark(False, True), Mark(False, False)]) is False


def test_gating_reads_the_engines_own_verdicts_too():
    verdict = Verdict(
        criterion_id="c1", description="d", required=True, satisfied=False, reasoning="r", key="k"
    )
    assert rubric_passed([verdict]) is False


def test_the_rubric_score_is_the_scale_when_passed_and_zero_otherwise():
    assert rubric_score(True, 5.0) == 5.0
    assert rubric_score(False, 5.0) == 0.0


def test_a_perspective_score_weighs_each_dimension_and_a_missing_one_is_an_error():
    scores = dict(zip(DIMENSIONS, (0.9, 0.8, 0.7, 0.6), strict=True))
    weights = AlignmentWeights().user.model_dump()
    assert math.isclose(perspective_score(scores, weights), 0.36 + 0.24 + 0.14 + 0.06)
    with pytest.raises(KeyError):
        perspective_score({"intent": 1.0}, weights)


def test_both_perspectives_mix_by_the_user_share_seventy_thirty_unless_configured():
    assert math.isclose(alignment_combine(0.8, 0.65), 0.7 * 0.8 + 0.3 * 0.65)
    assert math.isclose(alignment_combine(0.8, 0.65, 0.5), 0.725)
    assert alignment_combine(0.8, 0.65, 1.0) == 0.8


def test_one_perspective_stands_alone_and_none_scores_zero():
    assert alignment_combine(0.8, None) == 0.8
    assert alignment_combine(None, 0.65, 0.5) == 0.65
    assert alignment_combine(None, None) == 0.0
