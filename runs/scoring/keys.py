"""Verdict keys: when a stored verdict may stand in for a new judge call.

Two verdicts share a key when the same judge (model and sampling parameters) was asked about
the same criterion text, with the same prompt version, for the same task, system prompt and
output. Whether the criterion is required is not part of the key: it does not change what the
judge is asked, so flipping required/optional reuses every verdict.
"""

from __future__ import annotations

import hashlib
import json

from .types import JudgeConfig

# Bump whenever the rubric prompt or its JSON schema changes in a way that could change a
# verdict: every stored verdict then stops matching and gets judged afresh.
# rubric-2026-11: run texts and criteria in blocks under a random boundary (runs.scoring.prompts).
# A verdict given under the old prompt may have been steered by an output that closed its own
# block, so none is reused.
PROMPT_VERSION = "rubric-2026-11"


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
) -> str:
    """sha256 hex of a canonical JSON of everything a verdict depends on.

    None and "" are the same text (a run without a system prompt has either, depending on the
    caller). The judge enters through `JudgeConfig.identity()`, which holds no secrets. The
    texts are the rendered ones (runs.scoring.render): the key covers exactly what the judge
    saw, so a verdict is never reused across judge views, transcripts or reference answers.
    The final view without a reference hashes what it always did.
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
    canonical = json.dumps(
        payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
