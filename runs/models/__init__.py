"""The runs app's models, one module per concern; every name is importable from here.

status (what state a run or evaluation is in), runs (agent runs and their tools), batches
(re-score batches), evaluations (evaluations, verdicts, alignment breakdowns), budget (judge
budgets and their counters), compare (comparisons and the publishing gate), rollups (per-day
counts). OpenTelemetry ingest's staged spans and service defaults live with their code
(runs/otel/) and are registered from here too.
"""

from ..otel.models import OtelExportItem, OtelRejection, OtelServiceRubric, OtelSpan
from .batches import BatchStatus, RescoreBatch
from .budget import LIMIT_FIELDS, BudgetCounter, BudgetHold, BudgetPeriod, JudgeBudget
from .evaluations import AlignmentBreakdown, CriterionVerdict, Evaluation, Perspective
from .rollups import (
    NO_RUBRIC,
    CriterionDayRollup,
    EvaluationDayRollup,
    RunDayRollup,
    VersionDayRollup,
    VersionRollup,
)
from .runs import AgentRun, RunTool
from .status import FINAL_STATUSES, PENDING_STATUSES, Kind, Status, StatusChoice

__all__ = [
    "FINAL_STATUSES",
    "LIMIT_FIELDS",
    "NO_RUBRIC",
    "PENDING_STATUSES",
    "AgentRun",
    "AlignmentBreakdown",
    "BatchStatus",
    "BudgetCounter",
    "BudgetHold",
    "BudgetPeriod",
    "CriterionDayRollup",
    "CriterionVerdict",
    "Evaluation",
    "EvaluationDayRollup",
    "JudgeBudget",
    "Kind",
    "OtelExportItem",
    "OtelRejection",
    "OtelServiceRubric",
    "OtelSpan",
    "Perspective",
    "RescoreBatch",
    "RunDayRollup",
    "RunTool",
    "Status",
    "StatusChoice",
    "VersionDayRollup",
    "VersionRollup",
]
