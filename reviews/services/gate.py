"""The publishing gate: a draft is published only if, judged on the golden set (else on every
labelled run), it agrees well enough with the human labels.

The gate (``Rubric.gate``) holds up to three bounds, each optional: ``min_agreement`` and
``min_kappa`` per criterion of the draft, and ``max_drop``, the most a criterion's agreement
may fall against the current version on the same runs. A criterion no label answers is listed
as unmeasured and does not fail; any evaluation that failed fails the gate (a judge outage
must not wave a draft through).

Publishing is asynchronous: a publish request starts a gate comparison (current version vs
the draft) and answers "checking"; when the comparison's last batch ends (runs.hooks, after
commit) ``gate_settle`` decides, once (compare-and-set on ``gate_state``), and publishes a
passing draft. A request for a draft whose check failed is refused with the report (409); an
owner may publish it anyway with a reason, recorded on the version.
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from django.db.models import Q

from evalsite.errors import AppError, Conflict
from judge_engine import display_round
from rubrics.drafts import NotADraft, draft_publish
from rubrics.models import Rubric, RubricVersion
from runs.models import PENDING_STATUSES, Evaluation, Status
from teams.models import Team

from ..models import Comparison, ComparisonPurpose, GateState, VerdictLabel
from ..selectors.compare import ComparisonReport, comparison_report, comparison_report_json
from .compare import SampleIn, SideIn, comparison_start, golden_run_ids
from .errors import ReviewValidationError

GATE_FIELDS = ("min_agreement", "min_kappa", "max_drop")
HOW_TO_LABEL = (
    "this rubric has no labelled runs, so a gate has nothing to measure: open its review queue "
    "(Reviews → the rubric), agree or disagree with the judge's verdicts on some runs (mark a "
    "few as golden), then set the gate"
)
MAX_REASON = 500


class GateRefused(Conflict):
    """The draft failed the gate: 409 with the comparison report in ``extra``."""


class OwnersOnly(AppError):
    status = 403


def gate_set(*, rubric: Rubric, **bounds: Any) -> Rubric:
    """Set the gate's bounds (a float, or None to drop it); no bound at all removes the gate.
    Agreement and drop are 0..1, kappa −1..1. Refused on a rubric with no labelled runs."""
    unknown = set(bounds) - set(GATE_FIELDS)
    if unknown:
        raise ReviewValidationError({f"gate.{k}": "unknown field" for k in sorted(unknown)})
    errors: dict[str, str] = {}
    clean: dict[str, float | None] = {}
    for name in GATE_FIELDS:
        value = bounds.get(name)
        low = -1.0 if name == "min_kappa" else 0.0
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= 1
        ):
            errors[name] = f"a number between {low:g} and 1, or null"
        else:
            clean[name] = None if value is None else float(value)
    if errors:
        raise ReviewValidationError(errors)
    gate = clean if any(v is not None for v in clean.values()) else None
    if gate is not None and not VerdictLabel.objects.filter(rubric=rubric).exists():
        raise ReviewValidationError({"gate": HOW_TO_LABEL})
    rubric.gate = gate
    rubric.save(update_fields=["gate", "updated_at"])
    return rubric


def gate_check(gate: dict[str, Any], report: ComparisonReport) -> dict[str, Any]:
    """The gate's verdict on a finished report: {"passed", "failing": [{criterion_id,
    reasons}], "unmeasured": [criterion ids], "failed_evaluations"}."""
    failing, unmeasured = [], []
    for row in report.criteria:
        if row.description_b is None:
            continue  # removed by the draft
        b = row.agreement_b
        if b is None or not b.labelled or b.agreement is None:
            unmeasured.append(row.criterion_id)
            continue
        reasons = _reasons(gate, row.agreement_a, b)
        if reasons:
            failing.append({"criterion_id": row.criterion_id, "reasons": reasons})
    failed = sum(p.counts.get(Status.FAILED, 0) for p in report.sides() if p is not None)
    return {
        "passed": not failing and not failed,
        "failing": failing,
        "unmeasured": unmeasured,
        "failed_evaluations": failed,
        "gate": gate,
    }


def _two(value: float) -> str:
    return f"{display_round(value):.2f}"  # the one display rounding (half up)


def _reasons(gate: dict[str, Any], a: Any, b: Any) -> list[str]:
    reasons = []
    if gate.get("min_agreement") is not None and b.agreement < gate["min_agreement"]:
        reasons.append(f"agreement {_two(b.agreement)} is below {_two(gate['min_agreement'])}")
    kappa_min = gate.get("min_kappa")
    if kappa_min is not None and b.kappa is not None and b.kappa < kappa_min:
        reasons.append(f"kappa {_two(b.kappa)} is below {_two(kappa_min)}")
    drop = gate.get("max_drop")
    measured = a is not None and a.labelled and a.agreement is not None
    if drop is not None and measured and a.agreement - b.agreement > drop + 1e-9:
        reasons.append(
            f"agreement drops from {_two(a.agreement)} to {_two(b.agreement)} "
            f"(more than {_two(drop)})"
        )
    return reasons


@dataclass(frozen=True)
class PublishOutcome:
    state: str  # "published" | "checking" | GateState values
    version: RubricVersion
    comparison: Comparison | None = None


def _latest_check(rubric: Rubric, version: RubricVersion) -> Comparison | None:
    return (
        Comparison.objects.filter(
            rubric=rubric,
            purpose=ComparisonPurpose.GATE,
            version_b=version,
            version_a_id=rubric.current_version_id,
        )
        .select_related("rubric", "version_a", "version_b", "batch_a", "batch_b")
        .order_by("-created_at")
        .first()
    )


def _start_check(team: Team, rubric: Rubric, version: RubricVersion, user: Any) -> Comparison:
    kind = "golden" if golden_run_ids(rubric=rubric) else "labelled"
    comparison, _, _ = comparison_start(
        team=team, rubric=rubric, a=SideIn(), b=SideIn(version=version.number),
        sample=SampleIn(kind=kind), purpose=ComparisonPurpose.GATE, user=user,
    )  # fmt: skip
    assert comparison is not None
    Comparison.objects.filter(pk=comparison.pk).update(gate_state=GateState.CHECKING)
    comparison.gate_state = GateState.CHECKING
    gate_settle(comparison=comparison)  # an empty side ends at once
    return comparison


def publish_request(
    *,
    team: Team,
    rubric: Rubric,
    version: RubricVersion,
    user: Any = None,
    actor_name: str = "",
    override_reason: str = "",
    is_owner: bool = False,
) -> PublishOutcome:
    """Publish a draft: at once without a gate (or with no current version to compare with);
    with one, start the gate check ("checking"), report its state while it runs, publish once
    it passes, refuse (GateRefused, 409) once it failed, unless an owner gives a reason."""
    if version.rubric_id != rubric.pk:
        raise ReviewValidationError({"version": "not a version of this rubric"})
    if version.published:
        raise NotADraft(f"version {version.number} is already published")
    reason = (override_reason or "").strip()
    if len(reason) > MAX_REASON:
        raise ReviewValidationError({"override_reason": f"at most {MAX_REASON} characters"})
    if not rubric.gate or rubric.current_version_id is None:
        return PublishOutcome("published", draft_publish(rubric=rubric, version=version))
    check = _latest_check(rubric, version)
    if check is None:
        check = _start_check(team, rubric, version, user)
    elif check.gate_state == GateState.CHECKING:
        gate_settle(comparison=check)
    check.refresh_from_db()
    version.refresh_from_db()
    if check.gate_state == GateState.FAILED and reason:
        return _override(rubric, version, check, reason, actor_name, is_owner)
    if check.gate_state == GateState.FAILED:
        report = comparison_report_json(comparison_report(comparison=check), flips_shown=20)
        raise GateRefused(
            f"version {version.number} failed the publishing gate: not published",
            extra={"comparison": report},
        )
    state = "published" if version.published else check.gate_state
    return PublishOutcome(state, version, check)


def _override(
    rubric: Rubric,
    version: RubricVersion,
    check: Comparison,
    reason: str,
    actor_name: str,
    is_owner: bool,
) -> PublishOutcome:
    if not is_owner:
        raise OwnersOnly("only the team's owners may publish a draft version that failed the gate")
    note = f"published over the gate by {actor_name or 'an owner'}: {reason}"
    published = draft_publish(rubric=rubric, version=version, gate_note=note)
    Comparison.objects.filter(pk=check.pk, gate_state=GateState.FAILED).update(
        gate_state=GateState.OVERRIDDEN
    )
    check.gate_state = GateState.OVERRIDDEN
    return PublishOutcome("published", published, check)


def _pending(comparison: Comparison) -> bool:
    batches = [b for b in (comparison.batch_a_id, comparison.batch_b_id) if b]
    return Evaluation.objects.filter(batch_id__in=batches, status__in=PENDING_STATUSES).exists()


def gate_settle(*, comparison: Comparison) -> str:
    """Decide a gate check whose sides have ended (once: compare-and-set), publishing a
    passing draft. Safe to call any time; returns the gate state."""
    if comparison.gate_state != GateState.CHECKING or _pending(comparison):
        return comparison.gate_state
    comparison = Comparison.objects.select_related(
        "rubric", "version_a", "version_b", "batch_a", "batch_b"
    ).get(pk=comparison.pk)
    rubric = comparison.rubric
    verdict = gate_check(rubric.gate or {}, comparison_report(comparison=comparison))
    state = GateState.PASSED if verdict["passed"] else GateState.FAILED
    won = Comparison.objects.filter(pk=comparison.pk, gate_state=GateState.CHECKING).update(
        gate_state=state, gate_result=verdict
    )
    if won and state == GateState.PASSED:
        # NotADraft: published meanwhile (an owner's override): nothing to do.
        with suppress(NotADraft):
            draft_publish(
                rubric=rubric,
                version=comparison.version_b,
                gate_note=f"passed the publishing gate (comparison {comparison.pk})",
            )
    comparison.gate_state = state if won else comparison.gate_state
    return comparison.gate_state


def gate_on_batch_end(batch_id: Any) -> None:
    """runs.hooks: a batch ended; settle the gate check it belongs to, if any."""
    checks = Comparison.objects.filter(
        Q(batch_a_id=batch_id) | Q(batch_b_id=batch_id),
        purpose=ComparisonPurpose.GATE,
        gate_state=GateState.CHECKING,
    )
    for comparison in checks:
        gate_settle(comparison=comparison)
