"""Judge–human agreement per criterion of a rubric version, and the reviewed-verdicts export."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from rubrics.models import Criterion, Rubric, RubricVersion
from rubrics.selectors import example_runs
from runs.models import CriterionVerdict, Status

from ..effective import text_hash
from ..models import VerdictLabel
from ..stats import Agreement, agreement_of, confusion_of


@dataclass(frozen=True)
class CriterionAgreement:
    criterion_id: str
    description: str
    required: bool
    stats: Agreement
    flagged: bool  # kappa below EVALSITE_REVIEW_KAPPA_THRESHOLD

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stats, name)


@dataclass(frozen=True)
class AgreementReport:
    rubric: Rubric
    version: RubricVersion | None
    threshold: float
    criteria: list[CriterionAgreement]
    # Runs left out of a criterion's figures because the version shows them to the judge as
    # an example of it (a run is not scored against its own example).
    excluded_examples: int = 0

    @property
    def flagged(self) -> list[CriterionAgreement]:
        return [c for c in self.criteria if c.flagged]

    @property
    def labelled(self) -> int:
        return sum(c.stats.labelled for c in self.criteria)


def kappa_threshold() -> float:
    return float(settings.EVALSITE_REVIEW_KAPPA_THRESHOLD)


def version_pick(*, rubric: Rubric, number: int | None) -> RubricVersion | None:
    """Version ``number`` of the rubric, or its current version when no number is given."""
    if number is None:
        return rubric.current_version
    return RubricVersion.objects.filter(rubric=rubric, number=number).first()


def judge_verdicts(
    *, version: RubricVersion, run_ids: Any
) -> dict[tuple[Any, str], dict[str, Any]]:
    """For each (run, criterion key): the judge's verdict on ``version`` from the run's newest
    succeeded evaluation on it (calibration judgements excluded)."""
    rows = (
        CriterionVerdict.objects.filter(
            evaluation__rubric_version=version,
            evaluation__status=Status.SUCCEEDED,
            evaluation__calibration=False,
            run_id__in=run_ids,
        )
        .order_by("-evaluation__created_at")
        .values("run_id", "criterion_key", "description", "satisfied")
    )
    newest: dict[tuple[Any, str], Any] = {}
    for row in rows:
        newest.setdefault((row["run_id"], row["criterion_key"]), row)
    return newest


def rubric_agreement(*, rubric: Rubric, version: RubricVersion | None) -> AgreementReport:
    """Per criterion of ``version``: labelled count, agreement, kappa, TPR, TNR, confusion
    (positive = satisfied, the human label is the truth). A label counts when it answers the
    exact wording the judge was asked; a run that is one of the version's examples of a
    criterion does not count for that criterion. Four queries."""
    threshold = kappa_threshold()
    if version is None:
        return AgreementReport(rubric, None, threshold, [])
    criteria = list(Criterion.objects.filter(version=version).order_by("position"))
    labels = VerdictLabel.objects.filter(team_id=rubric.team_id, rubric=rubric)
    human = {
        (lb["run_id"], lb["criterion_key"], lb["text_hash"]): lb["satisfied"]
        for lb in labels.values("run_id", "criterion_key", "text_hash", "satisfied")
    }
    verdicts = judge_verdicts(version=version, run_ids=labels.values("run_id"))
    pairs: dict[str, list[tuple[bool, bool]]] = {c.key: [] for c in criteria}
    taught = example_runs(version_id=version.pk)
    excluded: set[Any] = set()
    for (run_id, key), row in verdicts.items():
        label = human.get((run_id, key, text_hash(row["description"])))
        if label is not None and key in pairs:
            if run_id in taught.get(key, ()):
                excluded.add(run_id)
                continue
            pairs[key].append((row["satisfied"], label))
    out = []
    for c in criteria:
        stats = agreement_of(confusion_of(pairs[c.key]))
        flagged = stats.kappa is not None and stats.kappa < threshold
        out.append(CriterionAgreement(c.key, c.description, c.required, stats, flagged))
    return AgreementReport(rubric, version, threshold, out, len(excluded))


def review_export_rows(*, rubric: Rubric) -> Iterator[dict[str, Any]]:
    """The rubric's reviewed verdicts, one per label in effect, oldest first: the run, the
    criterion, the judge's verdict the reviewer saw, the human verdict and the note."""
    labels = (
        VerdictLabel.objects.filter(team_id=rubric.team_id, rubric=rubric)
        .select_related("run", "source", "source__evaluation__rubric_version")
        .only(
            "criterion_key",
            "description",
            "satisfied",
            "note",
            "updated_at",
            "run__id",
            "run__external_id",
            "run__agent",
            "source__judge_satisfied",
            "source__actor_name",
            "source__created_at",
            "source__evaluation__rubric_version__number",
        )  # fmt: skip
        .order_by("updated_at", "id")
    )
    for label in labels.iterator(chunk_size=1000):
        evaluation = label.source.evaluation
        version = evaluation.rubric_version if evaluation else None
        yield {
            "run_id": str(label.run.id),
            "external_id": label.run.external_id or "",
            "agent": label.run.agent,
            "rubric_version": version.number if version else None,
            "criterion_id": label.criterion_key,
            "criterion": label.description,
            "judge_satisfied": label.source.judge_satisfied,
            "human_satisfied": label.satisfied,
            "agree": label.source.judge_satisfied == label.satisfied,
            "note": label.note,
            "reviewer": label.source.actor_name,
            "reviewed_at": label.updated_at.isoformat(),
        }
