"""A stored run whose content grew (an OpenTelemetry run a late span joined): its content
replaced and the run judged again, as a re-score would, the earlier evaluations kept."""

from __future__ import annotations

from ..models import PENDING_STATUSES, AgentRun, Evaluation, RunTool, Status
from ..payloads import RunPayload
from .evaluations import evaluations_enqueue
from .ingest import (
    alignment_evaluations,
    run_check_size,
    run_content,
    run_digest,
    run_tools,
    version_evaluation,
)


def run_content_replace(*, run: AgentRun, payload: RunPayload) -> bool:
    """Give ``run`` the content of ``payload`` (its rubric, sampling decision, results and
    evaluations stay); whether the content changed. RunTooLarge over EVALSITE_MAX_RUN_BYTES.
    The caller holds the run's row lock."""
    run_check_size(payload)
    digest = run_digest(payload)
    if digest == run.content_hash:
        return False
    fields = run_content(payload) | {"content_hash": digest}
    for name, value in fields.items():
        setattr(run, name, value)
    run.save(update_fields=list(fields))
    RunTool.objects.filter(run=run).delete()
    RunTool.objects.bulk_create(run_tools(run))
    return True


def run_rejudge(*, run: AgentRun) -> bool | None:
    """Judge a run whose content changed again. True: a new evaluation of each kind it is judged
    with (its rubric's current version, its alignment) is queued, or one still queued will read
    the new content; False: nothing judges it (it never was judged: no rubric, not sampled);
    None: one of its evaluations is being judged now, from the earlier content: call again once
    it has ended (the pending-evaluation constraint allows no second one meanwhile)."""
    pending = set(
        Evaluation.objects.filter(
            run=run, calibration=False, status__in=PENDING_STATUSES
        ).values_list("status", flat=True)
    )
    if Status.RUNNING in pending:
        return None
    if pending:
        return True
    if not Evaluation.objects.filter(run=run, calibration=False).exists():
        return False
    built = _evaluations(run)
    if not built:
        return False
    Evaluation.objects.bulk_create(built, ignore_conflicts=True)
    ids = list(Evaluation.objects.filter(pk__in=[e.pk for e in built]).values_list("pk", flat=True))
    AgentRun.objects.filter(pk=run.pk).exclude(status=Status.RUNNING).update(status=Status.QUEUED)
    evaluations_enqueue(ids, bulk=False)
    return True


def _evaluations(run: AgentRun) -> list[Evaluation]:
    rubric, prices = run.rubric, run.team.judge_prices
    out = []
    if rubric is not None and rubric.archived_at is None and rubric.current_version_id:
        out.append(version_evaluation(run=run, rubric=rubric, prices=prices))
    return out + alignment_evaluations(run=run, rubric=rubric, prices=prices)
