"""The API's schemas for runs, evaluations and scoring, and the functions that fill them; every
name is importable from here.

evaluations (verdicts, alignment breakdowns, an evaluation), runs (a run's summary, list item
and detail), bulk (bulk ingest), score (synchronous scoring). The run input is
runs.payloads.RunPayload (the public run payload). Outputs are built from rows fetched by
runs.selectors (verdicts and alignment prefetched), never by lazy loads here.
"""

from .bulk import BulkErrorItem, BulkIn, BulkItemOut, BulkItems, BulkOut
from .evaluations import (
    AlignmentOut,
    AppropriatenessOut,
    CompletenessOut,
    EvaluationOut,
    IntentOut,
    JudgeViewChoice,
    PerspectiveOut,
    RequirementsOut,
    VerdictOut,
    alignment_out,
    evaluation_out,
    verdict_out,
)
from .runs import (
    AlignmentChoice,
    JudgedOut,
    RunListItemOut,
    RunOut,
    RunPageOut,
    RunSummaryOut,
    run_list_item_out,
    run_out,
)
from .score import ScoreIn, ScoreOut, score_out

__all__ = [
    "AlignmentChoice",
    "AlignmentOut",
    "AppropriatenessOut",
    "BulkErrorItem",
    "BulkIn",
    "BulkItemOut",
    "BulkItems",
    "BulkOut",
    "CompletenessOut",
    "EvaluationOut",
    "IntentOut",
    "JudgeViewChoice",
    "JudgedOut",
    "PerspectiveOut",
    "RequirementsOut",
    "RunListItemOut",
    "RunOut",
    "RunPageOut",
    "RunSummaryOut",
    "ScoreIn",
    "ScoreOut",
    "VerdictOut",
    "alignment_out",
    "evaluation_out",
    "run_list_item_out",
    "run_out",
    "score_out",
    "verdict_out",
]
