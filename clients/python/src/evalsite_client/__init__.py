"""evalsite's Python client: ``Client`` for the API, ``until_passed`` for agent loops, and the
``evalsite`` command line (``evalsite_client.cli``)."""

from ._base import __version__
from .client import Client, until_passed
from .errors import ConfigurationError, EvalsiteError, JudgingFailed, OverBudget, StillJudging
from .operations import NOT_COVERED, OPERATIONS
from .results import LoopResult, ScoreResult

__all__ = [
    "NOT_COVERED",
    "OPERATIONS",
    "Client",
    "ConfigurationError",
    "EvalsiteError",
    "JudgingFailed",
    "LoopResult",
    "OverBudget",
    "ScoreResult",
    "StillJudging",
    "__version__",
    "until_passed",
]
