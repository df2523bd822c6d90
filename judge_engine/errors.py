"""The errors a scorer raises. Every message is meant for a person who has to act on it.

Callers decide on the class alone: a `TransientJudgeError` is worth retrying later (honour
`retry_after`), anything else is final. Each error carries `.calls`, the judge calls made before
it was raised, so the caller can record what the judge was shown and what it answered.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .types import JudgeCall


class JudgeError(Exception):
    """Base of every scoring failure."""

    def __init__(self, message: str, *, calls: Sequence[JudgeCall] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.calls: list[JudgeCall] = list(calls)


class TransientJudgeError(JudgeError):
    """The judge may answer later: timeout, 429, 5xx, connection refused.

    Raised once the engine's own retries are spent, or at once when the judge asks for a wait
    longer than the engine is willing to block for; `retry_after` (seconds) is then the judge's
    own hint for when to try again, or None when it gave none.
    """

    def __init__(
        self, message: str, *, retry_after: float | None = None, calls: Sequence[JudgeCall] = ()
    ) -> None:
        super().__init__(message, calls=calls)
        self.retry_after = retry_after


class PermanentJudgeError(JudgeError):
    """Retrying the same request cannot help: bad request, auth, unknown model, no judge."""


class InvalidJudgeOutput(PermanentJudgeError):
    """The judge's answer was still unusable after the bounded repair re-asks."""


class ScoringInputError(JudgeError, ValueError):
    """The run cannot be scored as configured (e.g. user mode without a user message).

    Raised before any judge call, so `.calls` is always empty.
    """


def pick_error(errors: Sequence[BaseException], calls: Sequence[JudgeCall]) -> BaseException:
    """Which failure of several concurrent judge calls to raise, now carrying all their calls.

    A bug (not a JudgeError) first, then a permanent failure (retrying would hit it again),
    then whichever came first.
    """
    bugs = [e for e in errors if not isinstance(e, JudgeError)]
    permanent = [e for e in errors if isinstance(e, PermanentJudgeError)]
    chosen = (bugs or permanent or list(errors))[0]
    if isinstance(chosen, JudgeError):
        chosen.calls = list(calls)
    return chosen
