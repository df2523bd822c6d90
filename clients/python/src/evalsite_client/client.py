"""``Client``: typed methods for every operation of the evalsite API (see ``operations.py``),
and ``until_passed``, the agent loop helper."""

from __future__ import annotations

from typing import Any

from ._compare import CompareMixin
from ._reviews import ReviewsMixin
from ._rubrics import RubricsMixin
from ._runs import RunsMixin
from ._suggest import SuggestMixin
from .loop import AgentStep, run_until_passed
from .results import LoopResult


class Client(RunsMixin, RubricsMixin, ReviewsMixin, CompareMixin, SuggestMixin):
    """An evalsite API client: ``Client(url=None, api_key=None)`` reads ``EVALSITE_URL`` and
    ``EVALSITE_API_KEY``. Failed calls raise ``EvalsiteError(status, message, field)``;
    429/502/503/504 and dropped connections are retried with backoff, honouring
    ``Retry-After``, on calls that are safe to repeat (see ``operations.py``)."""

    def until_passed(
        self, agent_step: AgentStep, *, max_steps: int = 5, **options: Any
    ) -> LoopResult:
        """See ``evalsite_client.until_passed``."""
        return run_until_passed(self, agent_step, max_steps=max_steps, **options)


def until_passed(
    agent_step: AgentStep,
    *,
    rubric: str | None = None,
    max_steps: int = 5,
    client: Client | None = None,
    **options: Any,
) -> LoopResult:
    """Run ``agent_step(feedback)`` until its output passes ``rubric`` (or inline
    ``criteria=``) or ``max_steps`` steps ran, feeding each failing step's ``reason`` back as
    ``feedback``, like Mastra's ``isTaskComplete``. Every step is a run with
    ``metadata.loop_id`` and ``metadata.loop_step``. ``client`` defaults to one configured
    from the environment; other options go to ``Client.score`` (``task=``, ``criteria=``,
    ``timeout=``, ``loop_id=``, ``metadata=``, ...)."""
    if client is not None:
        return run_until_passed(client, agent_step, rubric=rubric, max_steps=max_steps, **options)
    with Client() as own:
        return run_until_passed(own, agent_step, rubric=rubric, max_steps=max_steps, **options)
