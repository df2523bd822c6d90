"""The run's trajectory as the pages show it: every step formatted once, in Python, into a
plain dict, and the timeline's markup written here too: a 500-step run rendered through the
template engine cost ~250 ms of tag and filter calls; as strings it is a few milliseconds.

Steps are the run's stored ones (judge_engine.trajectory): untrusted JSON. Everything here is
read defensively and comes out as text the template escapes, except message HTML, which is
Markdown sanitized by ``ui.markdown``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import slugify

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


# --- Markup ---------------------------------------------------------------------------------------
# Every value from the run goes through escape(); the only unescaped text is our own constant
# markup and message HTML from ui.markdown (rendered, then sanitized by nh3).


def _head(s: dict[str, Any], run_url: str) -> str:
    i = s["index"]
    parts = [
        f'<a class="step-index" href="{escape(run_url)}#step-{i}" '
        f'title="Step {i} ({s["source"]})">#{i}</a>',
        f'<span class="step-label">{escape(s["label"])}</span>',
    ]
    if s["kind"] in ("tool_call", "tool_result"):
        parts.append(f'<code class="step-tool">{escape(s["tool"]) or "(no tool name)"}</code>')
        if s["call_id"]:
            parts.append(
                f'<span class="step-call mono" title="Call id">{escape(s["call_id"])}</span>'
            )
    if s["source"] == "output":
        parts.append('<span class="sr-only">(output)</span>')
    if s["is_error"]:
        parts.append('<span class="badge badge-fail" data-testid="step-error">✗ error</span>')
    for f in s["flags"]:
        code = escape(f["code"])
        parts.append(
            f'<span class="badge badge-warn" data-flag="{code}" title="{code}">'
            f"⚠ {escape(f['text'])}</span>"
        )
    return '<div class="step-head">' + "".join(parts) + "</div>"


def _body(s: dict[str, Any]) -> str:
    if s["kind"] == "message":
        if not s["html"]:
            return '<p class="muted small">(no text)</p>'
        return f'<div class="msg-body">{s["html"]}</div>'
    b = s["block"]
    pre = f"<pre>{escape(b['body'])}</pre>"
    if b["long"]:
        what = {"tool_call": "Arguments", "tool_result": "Error" if s["is_error"] else "Result"}
        summary = f"{what.get(s['kind'], 'Raw JSON')} · {b['size']}"
        pre = f'<details class="step-long"><summary>{summary}</summary>{pre}</details>'
    if b["cut"]:
        pre += f'<p class="small muted">… {b["cut"]:,} more characters: see the run\'s JSON.</p>'
    return pre


def _cited_by(s: dict[str, Any]) -> str:
    links = []
    for c in s["cited_by"]:
        key = escape(c["key"])
        yes = c["satisfied"]
        description = c["description"]
        if len(description) > 60:
            description = description[:59] + "…"
        links.append(
            f'<a href="#verdict-{key}" class="cite cite-{"yes" if yes else "no"}">{key} '
            f"{'✓' if yes else '✗'}<span class='sr-only'> "
            f"{'satisfied' if yes else 'not satisfied'}</span> {escape(description)}</a>"
        )
    return '<div class="step-cited small">Cited by: ' + "".join(links) + "</div>"


def step_markup(s: dict[str, Any], *, compact: bool = False, run_url: str = "") -> str:
    """One presented step as the timeline's ``<li id="step-<index>">``."""
    classes = ["step", f"step-{s['kind']}", f"step-{s['source']}"]
    if s["role"]:
        classes.append(f"step-role-{slugify(s['role'])}")
    if s["is_error"]:
        classes.append("step-error")
    if s["flags"]:
        classes.append("step-flagged")
    out = ""
    if s["starts_output"] and not compact:
        out = '<li class="timeline-divider" aria-hidden="true"><span>Output</span></li>'
    out += (
        f'<li id="step-{s["index"]}" class="{" ".join(classes)}" data-step="{s["index"]}">'
        f'{_head(s, run_url)}<div class="step-body">{_body(s)}</div>'
    )
    if s["cited_by"] and not compact:
        out += _cited_by(s)
    return out + "</li>"


def timeline_markup(
    steps: list[dict[str, Any]], *, compact: bool = False, run_url: str = ""
) -> SafeString:
    """The ``<ol class="timeline">`` of presented steps."""
    items = "".join(step_markup(s, compact=compact, run_url=run_url) for s in steps)
    css = "timeline timeline-compact" if compact else "timeline"
    items = items or '<li class="muted small">No steps.</li>'
    return mark_safe(  # noqa: S308 - every value in it is escaped above
        f'<ol class="{css}" data-testid="trajectory">{items}</ol>'
    )


@register.simple_tag
def run_timeline(run: Any, verdicts: Iterable[Any] = ()) -> dict[str, Any]:
    """``{% run_timeline run verdicts as t %}``: the whole trajectory, once per page:
    ``t.count`` steps and ``t.html`` the timeline."""
    steps = timeline(run.trajectory(), verdicts)
    return {"count": len(steps), "html": timeline_markup(steps)}


@register.simple_tag
def cited_steps(run: Any, verdict: Any, run_url: str = "") -> SafeString:
    """``{% cited_steps run verdict run_url as html %}``: the compact timeline of only the
    steps ``verdict`` cites (empty when it cites none), linking each to ``run_url``."""
    evidence = [i for i in getattr(verdict, "evidence", None) or [] if isinstance(i, int)]
    if not evidence:
        return mark_safe("")
    steps = timeline(run.trajectory(), [verdict], only=evidence)
    return timeline_markup(steps, compact=True, run_url=run_url) if steps else mark_safe("")


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
