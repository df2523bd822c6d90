"""Agreement between reviewers, per criterion of a rubric version, and the disputed runs.

Every reviewer's latest verdict counts (ReviewerLabel), on the exact wording the version asks.
An item is one run's criterion with verdicts from at least two reviewers. Exactly two
reviewers over a criterion's items: Cohen's kappa; more: Fleiss' kappa (reviews/stats.py).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from rubrics.models import Rubric
from runs.models import AgentRun

from ..effective import text_hash, tied
from ..models import ReviewerLabel
from ..stats import confusion_of, fleiss_kappa, kappa
from .agreement import AgreementReport

DISPUTED_SHOWN = 50


@dataclass(frozen=True)
class ReviewerAgreement:
    criterion_id: str
    items: int  # runs with verdicts from at least two reviewers on this wording
    reviewers: int  # distinct reviewers over those runs
    method: str | None  # "cohen" (two reviewers), "fleiss" (more), None (nothing to compare)
    kappa: float | None


@dataclass(frozen=True)
class DisputedRun:
    run_id: Any
    external_id: str
    criterion_id: str
    satisfied: int  # reviewers saying satisfied
    not_satisfied: int


@dataclass(frozen=True)
class ReviewerReport:
    criteria: dict[str, ReviewerAgreement]
    disputed: list[DisputedRun]  # the newest runs first, at most DISPUTED_SHOWN
    disputed_total: int


def inter_reviewer(criterion_id: str, runs: dict[Any, dict[str, bool]]) -> ReviewerAgreement:
    """Agreement between reviewers on one criterion; ``runs`` maps each run to its reviewers'
    verdicts (reviewer key -> satisfied). Runs with fewer than two verdicts do not count."""
    items = [votes for votes in runs.values() if len(votes) >= 2]
    raters = sorted({key for votes in items for key in votes})
    if len(raters) == 2:
        first, second = raters
        value = kappa(confusion_of((v[first], v[second]) for v in items))
        return ReviewerAgreement(criterion_id, len(items), 2, "cohen", value)
    if len(raters) > 2:
        table = [[sum(v.values()), len(v) - sum(v.values())] for v in items]
        return ReviewerAgreement(
            criterion_id, len(items), len(raters), "fleiss", fleiss_kappa(table)
        )
    everyone = {key for votes in runs.values() for key in votes}
    return ReviewerAgreement(criterion_id, 0, len(everyone), None, None)


def reviewer_agreement(*, report: AgreementReport) -> ReviewerReport:
    """Inter-reviewer agreement for each criterion of ``report``'s version, and its disputed
    runs. Two queries."""
    if report.version is None or not report.criteria:
        return ReviewerReport({}, [], 0)

    wordings = {(c.criterion_id, text_hash(c.description)) for c in report.criteria}
    rows = ReviewerLabel.objects.filter(
        team_id=report.rubric.team_id,
        rubric=report.rubric,
        criterion_key__in=[key for key, _ in wordings],
    ).values_list("run_id", "criterion_key", "text_hash", "reviewer_key", "satisfied")
    votes: dict[str, dict[Any, dict[str, bool]]] = defaultdict(lambda: defaultdict(dict))
    for run_id, key, digest, reviewer, satisfied in rows:
        if (key, digest) in wordings:
            votes[key][run_id][reviewer] = satisfied
    criteria = {
        c.criterion_id: inter_reviewer(c.criterion_id, votes[c.criterion_id])
        for c in report.criteria
    }
    disputes = [
        (run_id, c.criterion_id, ballot)
        for c in report.criteria
        for run_id, ballot in votes[c.criterion_id].items()
        if tied(ballot.values())
    ]
    return ReviewerReport(criteria, _disputed_rows(report.rubric, disputes), len(disputes))


def _disputed_rows(
    rubric: Rubric, disputes: list[tuple[Any, str, dict[str, bool]]]
) -> list[DisputedRun]:
    if not disputes:
        return []
    runs = {
        r["id"]: r
        for r in AgentRun.objects.filter(team_id=rubric.team_id, pk__in={d[0] for d in disputes})
        .order_by("-created_at", "-id")
        .values("id", "external_id", "created_at")[:DISPUTED_SHOWN]
    }
    shown = [d for d in disputes if d[0] in runs]
    shown.sort(key=lambda d: (runs[d[0]]["created_at"], str(d[0])), reverse=True)
    return [
        DisputedRun(
            run_id,
            runs[run_id]["external_id"] or "",
            key,
            sum(ballot.values()),
            len(ballot) - sum(ballot.values()),
        )
        for run_id, key, ballot in shown[:DISPUTED_SHOWN]
    ]
