"""Agreement maths against hand-computed examples (positive = satisfied, human = truth)."""

from reviews.stats import Confusion, agreement_of, confusion_of, flip_rate, kappa


def pairs(tp=0, fp=0, fn=0, tn=0):
    """(judge, human) pairs for a confusion matrix."""
    return [(True, True)] * tp + [(True, False)] * fp + [(False, True)] * fn + [(False, False)] * tn


def test_pairs_are_counted_into_the_confusion_matrix_with_the_human_as_truth():
    c = confusion_of([(True, True), (True, False), (True, False), (False, True), (False, False)])

    assert c == Confusion(tp=1, fp=2, fn=1, tn=1)
    assert c.as_dict() == {"tp": 1, "fp": 2, "fn": 1, "tn": 1}


def test_a_textbook_table_gives_kappa_point_four_and_its_rates():
    # n=50: p_o = 35/50 = 0.7; judge says yes 25/50, humans 30/50;
    # p_e = 0.5·0.6 + 0.5·0.4 = 0.5; kappa = (0.7 − 0.5) / (1 − 0.5) = 0.4.
    a = agreement_of(confusion_of(pairs(tp=20, fp=5, fn=10, tn=15)))

    assert a.labelled == 50
    assert a.agreement == 0.7
    assert a.kappa == 0.4
    assert a.tpr == 20 / 30
    assert a.tnr == 0.75


def test_thirds_compute_exactly():
    # tp=1 fp=1 tn=1: p_o = 2/3; judge yes 2/3, human yes 1/3; p_e = 2/9 + 2/9 = 4/9;
    # kappa = (2/3 − 4/9) / (5/9) = 2/5.
    a = agreement_of(Confusion(tp=1, fp=1, tn=1))

    assert a.kappa == 0.4
    assert a.tpr == 1.0
    assert a.tnr == 0.5


def test_perfect_agreement_over_both_classes_is_kappa_one():
    a = agreement_of(Confusion(tp=3, tn=2))

    assert (a.agreement, a.kappa, a.tpr, a.tnr) == (1.0, 1.0, 1.0, 1.0)


def test_complete_disagreement_is_kappa_minus_one():
    # p_o = 0; both raters say yes half the time: p_e = 0.5; kappa = −0.5 / 0.5.
    a = agreement_of(Confusion(fp=2, fn=2))

    assert (a.agreement, a.kappa, a.tpr, a.tnr) == (0.0, -1.0, 0.0, 0.0)


def test_no_labels_give_no_figures_at_all():
    a = agreement_of(confusion_of([]))

    assert a.labelled == 0
    assert (a.agreement, a.kappa, a.tpr, a.tnr) == (None, None, None, None)
    assert kappa(Confusion()) is None


def test_both_raters_all_satisfied_is_perfect_agreement_by_convention_and_has_no_tnr():
    # p_e = 1·1 + 0·0 = 1 makes the formula 0/0; both raters agree on every item: kappa 1.
    a = agreement_of(Confusion(tp=4))

    assert (a.agreement, a.kappa, a.tpr, a.tnr) == (1.0, 1.0, 1.0, None)


def test_both_raters_all_unsatisfied_is_perfect_agreement_and_has_no_tpr():
    a = agreement_of(Confusion(tn=3))

    assert (a.agreement, a.kappa, a.tpr, a.tnr) == (1.0, 1.0, None, 1.0)


def test_humans_all_satisfied_and_a_judge_that_sometimes_disagrees_is_kappa_zero():
    # p_o = 3/4; judge yes 3/4, human yes 1: p_e = 3/4; kappa = 0 / (1/4) = 0.
    a = agreement_of(Confusion(tp=3, fn=1))

    assert (a.agreement, a.kappa, a.tpr, a.tnr) == (0.75, 0.0, 0.75, None)


def test_a_judge_that_always_says_satisfied_agrees_only_by_chance():
    # p_o = 1/2; judge yes 1, human yes 1/2: p_e = 1/2; kappa = 0.
    a = agreement_of(Confusion(tp=2, fp=2))

    assert (a.agreement, a.kappa, a.tpr, a.tnr) == (0.5, 0.0, 1.0, 0.0)


def test_flip_rate_counts_items_judged_at_least_twice_that_got_both_verdicts():
    compared, flipped, rate = flip_rate([[True, True, True], [True, False], [False], []])

    assert (compared, flipped, rate) == (2, 1, 0.5)


def test_flip_rate_without_repeated_judgements_is_undefined():
    assert flip_rate([[True], []]) == (0, 0, None)
