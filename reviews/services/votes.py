"""Several reviewers: the label in effect is the majority of the reviewers' latest verdicts.

Each reviewer's latest verdict on a criterion wording is a ReviewerLabel (rewritten with each
of their changes, see labels.py); the VerdictLabel that agreement, golden sets and the run's
human-adjusted result read is taken from them here, in the same transaction. A tie leaves no
VerdictLabel: the criterion counts as unlabelled and is shown as disputed.
"""

from __future__ import annotations

from django.utils import timezone

from ..effective import majority
from ..models import ReviewerLabel, VerdictLabel, VerdictOverride


def majority_settle(*, row: VerdictOverride) -> VerdictLabel | None:
    """Take the majority of the reviewers' verdicts on ``row``'s criterion wording and make it
    the label in effect (its note and source: the newest verdict on the winning side). None
    when nobody has a verdict left or the verdicts tie. The caller holds the run's lock."""
    identity = {
        "run_id": row.run_id,
        "rubric_id": row.rubric_id,
        "criterion_key": row.criterion_key,
        "text_hash": row.text_hash,
    }
    votes = list(ReviewerLabel.objects.filter(**identity).order_by("-updated_at"))
    verdict = majority(v.satisfied for v in votes)
    if verdict is None:
        VerdictLabel.objects.filter(**identity).delete()
        return None
    newest = next(v for v in votes if v.satisfied == verdict)
    label, _ = VerdictLabel.objects.update_or_create(
        **identity,
        defaults={
            "satisfied": verdict,
            "note": newest.note,
            "source_id": newest.source_id,
            "updated_at": timezone.now(),
        },
        create_defaults={
            "team_id": row.team_id,
            "description": row.description,
            "satisfied": verdict,
            "note": newest.note,
            "source_id": newest.source_id,
            "updated_at": timezone.now(),
        },
    )
    return label
