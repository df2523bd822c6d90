"""Reads for runs and evaluations, shared by the API and the HTML dashboard, one module per
entity or page; every public name is re-exported here.

Every function is scoped to a team: another team's object is simply not found (None), which
callers turn into a 404.
"""

from .batches import (
    BATCH_FINAL,
    FAILURES_SHOWN,
    BatchPage,
    BatchProgress,
    batch_get,
    batch_progress,
    batches_list,
    batches_progress,
)
from .dashboard import (
    BANDS,
    FirstSteps,
    HomeOverview,
    RunDetail,
    first_steps,
    home_overview,
    run_detail,
)
from .evaluations import (
    Scored,
    evaluation_get,
    evaluations_for_run,
    evaluations_latest_for_runs,
    evaluations_pending,
    evaluations_scored,
)
from .filters import RunFilterError, RunFilters, result_passed_q, runs_matching, tools_recent
from .rubric_stats import (
    CriterionFailures,
    FailingRunStep,
    RubricRow,
    VersionRow,
    failing_runs_walk,
    rubric_failure_rates,
    rubric_rows,
    rubric_try_run,
    rubric_try_runs,
    rubric_versions,
)
from .runs import HEAVY_RUN_FIELDS, PREVIEW_CHARS, RunPage, run_get, run_status_cell, runs_list

__all__ = [
    "BANDS",
    "BATCH_FINAL",
    "FAILURES_SHOWN",
    "HEAVY_RUN_FIELDS",
    "PREVIEW_CHARS",
    "BatchPage",
    "BatchProgress",
    "CriterionFailures",
    "FailingRunStep",
    "HomeOverview",
    "RubricRow",
    "RunDetail",
    "RunFilterError",
    "RunFilters",
    "RunPage",
    "Scored",
    "VersionRow",
    "batch_get",
    "result_passed_q",
    "batch_progress",
    "batches_list",
    "batches_progress",
    "evaluation_get",
    "evaluations_scored",
    "evaluations_for_run",
    "evaluations_latest_for_runs",
    "evaluations_pending",
    "failing_runs_walk",
    "home_overview",
    "first_steps",
    "FirstSteps",
    "rubric_failure_rates",
    "rubric_rows",
    "rubric_try_run",
    "rubric_try_runs",
    "rubric_versions",
    "run_detail",
    "run_get",
    "run_status_cell",
    "runs_list",
    "runs_matching",
    "tools_recent",
]
