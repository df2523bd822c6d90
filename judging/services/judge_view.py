"""What the judge sees of a stored run: its steps rendered in the evaluation's judge view."""

from __future__ import annotations

from functools import partial
from typing import cast

from judge_engine.llm import count_tokens
from judge_engine.render import DEFAULT_TOKEN_BUDGET, RunView, View, render
from runs.models import AgentRun


def run_rendered(
    run: AgentRun, *, model: str, view: str = "final", budget: int | None = None
) -> RunView:
    """The run in ``view`` within ``budget`` tokens counted for the judge ``model``; the texts
    extracted at ingest are the final view's (so rows stored before steps existed render as
    they always were judged)."""
    # The final view reads only the three texts: no need to load or rebuild the steps.
    steps = run.trajectory() if view and view != "final" else []
    return render(
        steps,
        view=cast(View, view or "final"),
        reference=run.expected_output or None,
        budget=budget or DEFAULT_TOKEN_BUDGET,
        count=partial(count_tokens, model),
        texts=(run.task_text, run.system_text, run.output_text),
    )
