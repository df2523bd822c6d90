"""The run's trajectory as the pages show it: every step formatted once, in Python, into a
plain dict the template only places (a 500-step run must not run filters per step).

Steps are the run's stored ones (runs.scoring.trajectory): untrusted JSON. Everything here is
read defensively and comes out as text the template escapes, except message HTML, which is
Markdown sanitized by ``ui.markdown``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from django import template

from rubrics.models import JudgeView

from .ui import markdown, role_label

register = template.Library()

# Longer arguments or results are collapsed in <details> (expandable without JavaScript).
LONG_CHARS = 1_200
LONG_LINES = 20
# A block is shown up to this many characters; the rest is in the run's JSON.
MAX_SHOWN_CHARS = 100_000

FLAG_TEXT = {
    "arguments_not_json": "arguments are not JSON (shown as sent)",
    "missing_tool_name": "the call names no tool",
    "missing_call_id": "no call id",
    "unmatched_call": "no call matches this result",
}
KIND_LABEL = {"tool_call": "Tool call", "tool_result": "Tool result", "unknown": "Unknown part"}


def _pretty(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


def _block(text: str) -> dict[str, Any]:
    """A <pre> block: its text (capped), whether it is long enough to collapse, its size."""
    lines = text.count("\n") + 1
    shown = text[:MAX_SHOWN_CHARS]
    return {
        "body": shown,
        "cut": len(text) - len(shown),
        "long": len(text) > LONG_CHARS or lines > LONG_LINES,
        "size": f"{lines:,} line{'s' if lines != 1 else ''}, {len(text):,} characters",
    }


def _citations(verdicts: Iterable[Any]) -> dict[int, list[dict[str, Any]]]:
    """Step index → the verdicts citing it (key, satisfied, description), in verdict order."""
    cited: dict[int, list[dict[str, Any]]] = {}
    for v in verdicts:
        for index in getattr(v, "evidence", None) or []:
            if isinstance(index, int):
                cited.setdefault(index, []).append(
                    {
                        "key": v.criterion_key,
                        "satisfied": v.satisfied,
                        "description": v.description,
                    }
                )
    return cited


def present_step(step: Any, position: int) -> dict[str, Any]:
    """One step as the timeline shows it."""
    if not isinstance(step, dict):
        step = {"kind": "unknown", "raw": step}
    index = step.get("index")
    kind = (
        step.get("kind")
        if step.get("kind") in ("message", "tool_call", "tool_result")
        else "unknown"
    )
    out: dict[str, Any] = {
        "index": index if isinstance(index, int) else position,
        "source": "output" if step.get("source") == "output" else "input",
        "kind": kind,
        "role": str(step.get("role") or ""),
        "flags": [
            {"code": str(f), "text": FLAG_TEXT.get(str(f), str(f))} for f in step.get("flags") or []
        ],
        "is_error": kind == "tool_result" and bool(step.get("is_error")),
    }
    if kind == "message":
        text = str(step.get("text") or "")
        out["label"] = role_label(out["role"] or "message")
        out["html"] = markdown(text) if text.strip() else ""
        return out
    out["label"] = KIND_LABEL[kind]
    if kind == "unknown":
        out["block"] = _block(_pretty(step.get("raw")))
        return out
    out["tool"] = str(step.get("tool") or "")
    out["call_id"] = str(step.get("call_id") or "")
    body = step.get("arguments") if kind == "tool_call" else str(step.get("content") or "")
    out["block"] = _block(_pretty(body))
    return out


def timeline(
    steps: Sequence[Any], verdicts: Iterable[Any] = (), *, only: Iterable[int] | None = None
) -> list[dict[str, Any]]:
    """The steps (or only those whose index is in ``only``) with the verdicts citing each; the
    first output step is marked ``starts_output`` so the page can separate input from output."""
    cited = _citations(verdicts)
    wanted = set(only) if only is not None else None
    out = []
    seen_output = False
    for position, step in enumerate(steps):
        if (
            wanted is not None
            and (step.get("index") if isinstance(step, dict) else position) not in wanted
        ):
            continue
        shown = present_step(step, position)
        shown["starts_output"] = shown["source"] == "output" and not seen_output
        seen_output = seen_output or shown["source"] == "output"
        shown["cited_by"] = cited.get(shown["index"], [])
        out.append(shown)
    return out


@register.simple_tag
def run_timeline(run: Any, verdicts: Iterable[Any] = ()) -> list[dict[str, Any]]:
    """``{% run_timeline run verdicts as steps %}``: the whole trajectory, once per page."""
    return timeline(run.trajectory(), verdicts)


@register.simple_tag
def cited_steps(run: Any, verdict: Any) -> list[dict[str, Any]]:
    """``{% cited_steps run verdict as steps %}``: only the steps ``verdict`` cites."""
    evidence = [i for i in getattr(verdict, "evidence", None) or [] if isinstance(i, int)]
    if not evidence:
        return []
    return timeline(run.trajectory(), [verdict], only=evidence)


@register.simple_tag
def judge_saw(evaluation: Any) -> dict[str, Any]:
    """``{% judge_saw e as saw %}``: the evaluation's judge view (value and label), the token
    figures of its rendering and what the rendering cut, as sentences (``notes``, empty when
    nothing was cut). Never hidden: the run page lists every one."""
    view = str(getattr(evaluation, "judge_view", "") or JudgeView.FINAL)
    rendering = getattr(evaluation, "rendering", None) or {}
    if not isinstance(rendering, dict):
        rendering = {}
    labels = dict(JudgeView.choices)
    return {
        "view": view,
        "label": labels.get(view, view),
        "tokens": rendering.get("tokens"),
        "budget": rendering.get("budget") or getattr(evaluation, "run_token_budget", None),
        "notes": rendering_notes(rendering),
    }


def rendering_notes(rendering: dict[str, Any]) -> list[str]:
    """Each cut an Evaluation.rendering records, as a sentence."""
    notes = []
    for cut in rendering.get("elided") or []:
        if isinstance(cut, dict):
            calls = cut.get("tool_calls", 0)
            notes.append(
                f"steps {cut.get('from')}–{cut.get('to')} elided: {cut.get('steps')} steps, "
                f"{calls} tool call{'' if calls == 1 else 's'}"
            )
    shortened = [str(i) for i in rendering.get("shortened") or []]
    if shortened:
        notes.append(
            f"tool result{'s' if len(shortened) > 1 else ''} of step"
            f"{'s' if len(shortened) > 1 else ''} {', '.join(shortened)} shortened"
        )
    blocks = [str(b) for b in rendering.get("blocks_shortened") or []]
    if blocks:
        notes.append(f"shortened to fit: {', '.join(blocks)}")
    return notes
