"""Verdict keys: when a stored verdict may stand in for a new judge call.

Two verdicts share a key when the same judge (model and sampling parameters) was asked about
the same criterion text, with the same prompt version, for the same task, system prompt and
output. Whether the criterion is required is not part of the key: it does not change what the
judge is asked, so flipping required/optional reuses every verdict.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence

from .examples import Example, key_part
from .render import RunView
from .types import Criterion, JudgeConfig

# Bump whenever the rubric prompt or its JSON schema changes in a way that could change a
# verdict: every stored verdict then stops matching and gets judged afresh.
# rubric-2026-11: run texts and criteria in blocks under a random boundary (judge_engine.prompts).
# A verdict given under the old prompt may have been steered by an output that closed its own
# block, so none is reused.
# rubric-2026-12: the verdict schema asks for the reasoning (and the evidence) before
# `satisfied`; with structured output that changes how the judge arrives at its verdict, so a
# verdict given when it decided first is not reused.
PROMPT_VERSION = "rubric-2026-12"


def verdict_key(
    judge: JudgeConfig,
    criterion_description: str,
    task: str | None,
    system: str | None,
    output: str | None,
    *,
    view: str = "final",
    transcript: str | None = None,
    reference: str | None = None,
    instructions: str | None = None,
    examples: Sequence[Example] = (),
) -> str:
    """sha256 hex of a canonical JSON of everything a verdict depends on.

    None and "" are the same text (a run without a system prompt has either, depending on the
    caller). The judge enters through `JudgeConfig.identity()`, which holds no secrets. The
    texts are the rendered ones (judge_engine.render): the key covers exactly what the judge
    saw, so a verdict is never reused across judge views, transcripts or reference answers.
    The final view without a reference hashes what it always did. ``instructions`` (the
    rubric's) and ``examples`` (this criterion's, as shown) enter only when there are some, so
    keys of rubrics without them stay as they were and their stored verdicts are still reused.
    """
    payload: dict[str, object] = {
        "prompt_version": PROMPT_VERSION,
        "judge": judge.identity(),
        "criterion": criterion_description,
        "task": task or "",
        "system": system or "",
        "output": output or "",
    }
    if view != "final" or transcript is not None or reference:
        payload |= {"view": view, "transcript": transcript or "", "reference": reference or ""}
    if instructions:
        payload["instructions"] = instructions
    if examples:
        payload["examples"] = key_part(examples)
    canonical = json.dumps(
        payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def criterion_keys(
    judge: JudgeConfig,
    criteria: Sequence[Criterion],
    shown: RunView,
    instructions: str = "",
    taught: Mapping[str, Sequence[Example]] | None = None,
) -> dict[str, str]:
    """Criterion id -> verdict key on a rendered run, with the rubric's instructions and each
    criterion's examples as shown (``taught``)."""
    taught = taught or {}
    return {
        str(c.id): key_for(judge, c.description, shown, instructions, taught.get(str(c.id), ()))
        for c in criteria
    }


def key_for(
    judge: JudgeConfig,
    description: str,
    shown: RunView,
    instructions: str = "",
    examples: Sequence[Example] = (),
) -> str:
    """The verdict key of one criterion on a rendered run (exactly what the judge sees)."""
    return verdict_key(
        judge,
        description,
        shown.task,
        shown.system,
        shown.output,
        view=shown.view,
        transcript=shown.transcript,
        reference=shown.reference,
        instructions=instructions,
        examples=examples,
    )
