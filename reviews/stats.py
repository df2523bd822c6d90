"""Agreement between the judge and human reviewers: pure maths, no Django.

Conventions (the human label is the truth; *positive* means "satisfied"):

* ``tp`` judge satisfied, human satisfied; ``fp`` judge satisfied, human not;
  ``fn`` judge not, human satisfied; ``tn`` neither.
* ``agreement`` = (tp + tn) / n. ``tpr`` = tp / (tp + fn), the share of truly satisfied
  verdicts the judge recognised; ``tnr`` = tn / (tn + fp).
* Cohen's kappa = (p_o − p_e) / (1 − p_e), with p_o the observed agreement and p_e the
  agreement expected by chance from each rater's own rate of "satisfied".

Degenerate cases, by convention:

* No labels (n = 0): every figure is None — there is nothing to measure.
* No human positives: ``tpr`` is None (no satisfied verdict to recognise); likewise ``tnr``
  with no human negatives.
* p_e = 1 happens only when both raters put every item in the same single class, i.e. they
  agree perfectly: kappa is then 1.0 (perfect agreement), not an undefined 0/0. Otherwise
  kappa is always defined; it is 0 when the judge agrees no better than chance (for example a
  judge that says "satisfied" to everything while humans also mostly say so) and negative
  when it agrees worse than chance.

Between reviewers (no truth, only raters): Cohen's kappa when exactly two reviewers labelled
the items, Fleiss' kappa when more did (``fleiss_kappa``). Fleiss (1971) assumes every item
has the same number of ratings; here items may have two, three or more, so each item's
agreement P_i uses its own n_i and the category shares p_j are taken over all ratings — with
equal n_i this is exactly Fleiss' formula. P̄e = 1 (everyone used one category) is kappa 1.0,
as above.

Figures are computed with exact fractions and converted to floats at the end, so they match
hand-computed examples exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True)
class Confusion:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    def as_dict(self) -> dict[str, int]:
        return {"tp": self.tp, "fp": self.fp, "fn": self.fn, "tn": self.tn}


@dataclass(frozen=True)
class Agreement:
    labelled: int
    agreement: float | None
    kappa: float | None
    tpr: float | None
    tnr: float | None
    confusion: Confusion


def confusion_of(pairs: Iterable[tuple[bool, bool]]) -> Confusion:
    """Count (judge, human) verdict pairs."""
    counts = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
    for judge, human in pairs:
        if judge:
            counts["tp" if human else "fp"] += 1
        else:
            counts["fn" if human else "tn"] += 1
    return Confusion(**counts)


def _ratio(part: int, whole: int) -> Fraction | None:
    return Fraction(part, whole) if whole else None


def _float(value: Fraction | None) -> float | None:
    return None if value is None else float(value)


def kappa(c: Confusion) -> float | None:
    """Cohen's kappa of a 2×2 confusion matrix (see the module docstring for edge cases)."""
    n = c.n
    if n == 0:
        return None
    observed = Fraction(c.tp + c.tn, n)
    judge_yes, human_yes = Fraction(c.tp + c.fp, n), Fraction(c.tp + c.fn, n)
    expected = judge_yes * human_yes + (1 - judge_yes) * (1 - human_yes)
    if expected == 1:
        return 1.0  # both raters used one and the same class for every item
    return float((observed - expected) / (1 - expected))


def agreement_of(c: Confusion) -> Agreement:
    return Agreement(
        labelled=c.n,
        agreement=_float(_ratio(c.tp + c.tn, c.n)),
        kappa=kappa(c),
        tpr=_float(_ratio(c.tp, c.tp + c.fn)),
        tnr=_float(_ratio(c.tn, c.tn + c.fp)),
        confusion=c,
    )


def flip_rate(verdict_sets: Iterable[Iterable[bool]]) -> tuple[int, int, float | None]:
    """Judge consistency: of the items judged at least twice, how many got both verdicts.

    Returns (items compared, items that flipped, flipped / compared or None)."""
    compared = flipped = 0
    for verdicts in verdict_sets:
        values = list(verdicts)
        if len(values) < 2:
            continue
        compared += 1
        flipped += len(set(values)) > 1
    return compared, flipped, _float(_ratio(flipped, compared))


def fleiss_kappa(table: Sequence[Sequence[int]]) -> float | None:
    """Fleiss' kappa of a subjects × categories table of rating counts (row i, column j: how
    many raters put item i in category j). Items with fewer than two ratings are ignored;
    None when no item is left."""
    rows = [row for row in table if sum(row) >= 2]
    if not rows:
        return None
    total = sum(sum(row) for row in rows)
    shares = [Fraction(sum(row[j] for row in rows), total) for j in range(len(rows[0]))]
    per_item = [
        Fraction(sum(c * c for c in row) - sum(row), sum(row) * (sum(row) - 1)) for row in rows
    ]
    observed = sum(per_item, Fraction(0)) / len(rows)
    expected = sum((p * p for p in shares), Fraction(0))
    if expected == 1:
        return 1.0
    return float((observed - expected) / (1 - expected))
