"""Several reviewers, the maths: majority labels, ties, Cohen's and Fleiss' kappa between
reviewers, checked against published worked examples."""

import pytest

from reviews.effective import majority, tied
from reviews.selectors.reviewers import inter_reviewer
from reviews.stats import fleiss_kappa


def test_the_label_is_what_most_reviewers_said():
    assert majority([True]) is True
    assert majority([False]) is False
    assert majority([True, True, False]) is True
    assert majority([False, True, False, False, True]) is False


def test_a_tie_or_no_verdict_is_no_label_and_only_a_tie_is_disputed():
    assert majority([True, False]) is None
    assert majority([True, False, False, True]) is None
    assert majority([]) is None
    assert tied([True, False]) and tied([False, True, True, False])
    assert not tied([]) and not tied([True]) and not tied([True, True, False])


# Wikipedia, "Fleiss' kappa", section "Worked example"
# (https://en.wikipedia.org/wiki/Fleiss%27_kappa#Worked_example): 14 raters put each of 10
# subjects into one of 5 categories. The article gives P̄ = 0.378, P̄e = 0.213, κ = 0.210.
WIKIPEDIA_FLEISS = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def test_fleiss_kappa_of_wikipedias_worked_example_is_0_210():
    assert fleiss_kappa(WIKIPEDIA_FLEISS) == pytest.approx(0.2099, abs=5e-5)
    assert round(fleiss_kappa(WIKIPEDIA_FLEISS), 3) == 0.210


def test_fleiss_kappa_by_hand_for_three_reviewers_and_two_verdicts():
    # Four runs, three reviewers: 3–0, 2–1, 1–2, 0–3. P_i = 1, 1/3, 1/3, 1, so P̄ = 2/3;
    # half of all verdicts say satisfied, so P̄e = 1/2; κ = (2/3 − 1/2) / (1 − 1/2) = 1/3.
    assert fleiss_kappa([[3, 0], [2, 1], [1, 2], [0, 3]]) == pytest.approx(1 / 3)


def test_fleiss_kappa_ignores_runs_with_one_verdict_and_is_none_without_any_pair():
    assert fleiss_kappa([[3, 0], [2, 1], [1, 2], [0, 3], [1, 0]]) == pytest.approx(1 / 3)
    assert fleiss_kappa([[1, 0], [0, 1]]) is None
    assert fleiss_kappa([]) is None


def test_fleiss_kappa_is_one_when_everyone_used_one_verdict_throughout():
    assert fleiss_kappa([[3, 0], [4, 0]]) == 1.0


def test_fleiss_kappa_of_complete_splits_is_negative():
    # Every run split 1–1 between two raters: P̄ = 0 and P̄e = 1/2, so κ = −1.
    assert fleiss_kappa([[1, 1], [1, 1]]) == pytest.approx(-1.0)


def _runs(*ballots):
    return {f"run{i}": ballot for i, ballot in enumerate(ballots)}


def test_two_reviewers_are_compared_with_cohens_kappa_on_wikipedias_worked_example():
    # Wikipedia, "Cohen's kappa", section "Simple example"
    # (https://en.wikipedia.org/wiki/Cohen%27s_kappa#Simple_example): of 50 proposals, A and
    # B both say yes to 20 and no to 15; A yes / B no: 5; A no / B yes: 10. p_o = 0.7,
    # p_e = 0.5, κ = 0.4.
    ballots = (
        [{"A": True, "B": True}] * 20
        + [{"A": False, "B": False}] * 15
        + [{"A": True, "B": False}] * 5
        + [{"A": False, "B": True}] * 10
    )
    result = inter_reviewer("c1", _runs(*ballots, {"A": True}))

    assert (result.method, result.items, result.reviewers) == ("cohen", 50, 2)
    assert result.kappa == pytest.approx(0.4)


def test_three_reviewers_are_compared_with_fleiss_kappa():
    result = inter_reviewer(
        "c1",
        _runs(
            {"A": True, "B": True, "C": True},
            {"A": True, "B": True, "C": False},
            {"A": True, "B": False, "C": False},
            {"A": False, "B": False, "C": False},
        ),
    )

    assert (result.method, result.items, result.reviewers) == ("fleiss", 4, 3)
    assert result.kappa == pytest.approx(1 / 3)


def test_pairs_from_different_reviewers_count_as_more_than_two_reviewers():
    result = inter_reviewer("c1", _runs({"A": True, "B": True}, {"B": False, "C": True}))

    assert (result.method, result.reviewers, result.items) == ("fleiss", 3, 2)


def test_one_reviewer_has_nobody_to_agree_with():
    result = inter_reviewer("c1", _runs({"A": True}, {"A": False}))

    assert (result.method, result.kappa, result.items, result.reviewers) == (None, None, 0, 1)
