"""What the judge sees of a run: its judge view, rendered within a token budget.

Views (SCORING.md "Judge views"):

* ``final``: the first user message, the system prompt and the final assistant answer (the
  seed semantics; the prompt is exactly the one the engine always wrote);
* ``conversation``: those, plus a transcript of every user and assistant turn in order;
* ``trajectory``: those, plus a transcript of every turn and every tool call with its
  arguments and result.

A transcript line starts with its step index, ``[7] tool call lookup_order (call_1): {...}``,
so
a verdict can cite the steps it relied on. A reference answer (the run's ``expected_output``)
goes with every view.

Over the budget, the rendering first shortens long tool results (head and tail kept, the cut
marked in place), then elides the oldest steps after the first user turn, keeping the most
recent ones, behind one marker ``[… steps 12–87 elided: 76 steps, 41 tool calls …]``, and as a
last resort shortens the longest of the other blocks. Every cut is recorded in
``RunView.rendering``; nothing is cut silently.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from .trajectory import Step, final_texts, normalise

View = Literal["final", "conversation", "trajectory"]
VIEWS: tuple[View, ...] = ("final", "conversation", "trajectory")
DEFAULT_TOKEN_BUDGET = 24_000
# A tool result longer than this (in characters) is shortened first when over budget.
LONG_RESULT = 2_000
_KEEP_HEAD, _KEEP_TAIL = 1_200, 400
# Below this many characters of text in all, no count is needed: at least ~2 characters per
# token in every tokenizer we know, so the text is within budget.
_CHARS_PER_TOKEN_FLOOR = 2

Counter = Callable[[str], int]


@dataclass(frozen=True)
class RunView:
    """The texts of one judge prompt, as rendered."""

    view: View
    task: str
    system: str
    output: str
    transcript: str | None = None  # conversation / trajectory views
    reference: str | None = None
    # All user turns (the alignment scorer's reference in conversation / trajectory views).
    user_turns: str = ""
    shown_steps: frozenset[int] = frozenset()
    rendering: dict[str, Any] = field(default_factory=dict)
    # The output's steps other than messages (tool calls, their results, unknown parts) that
    # this view shows the judge: the trajectory view's; none in the other views.
    output_actions: int = 0

    @property
    def has_transcript(self) -> bool:
        return self.transcript is not None

    @property
    def has_output(self) -> bool:
        """Whether the agent produced anything the judge would look at (SCORING.md "No
        output at all"): output text, or, in a view that shows them, tool calls."""
        return bool(self.output.strip()) or self.output_actions > 0


def approx_tokens(text: str) -> int:
    """A cheap upper-ish estimate (4 characters a token) for callers without a tokenizer."""
    return (len(text) + 3) // 4


def _arguments(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def step_line(step: Step, content: str | None = None) -> str:
    """One transcript line (several when the text has several)."""
    i, kind = step["index"], step["kind"]
    flags = f" [{', '.join(step['flags'])}]" if step.get("flags") else ""
    if kind == "message":
        return f"[{i}] {step['role']}: {step['text']}"
    if kind == "tool_call":
        name = step.get("tool") or "(no name)"
        return f"[{i}] tool call {name} ({step.get('call_id') or 'no id'}){flags}: " + _arguments(
            step.get("arguments")
        )
    if kind == "tool_result":
        error = " ERROR" if step.get("is_error") else ""
        name = step.get("tool") or "(unknown tool)"
        body = step.get("content", "") if content is None else content
        return f"[{i}] tool result {name} ({step.get('call_id') or 'no id'}){error}{flags}: {body}"
    return f"[{i}] {step.get('role') or 'item'} (unrecognised part): " + _arguments(step.get("raw"))


def _in_view(step: Step, view: View) -> bool:
    if step["kind"] == "message":
        return step.get("role") in ("user", "assistant")
    return view == "trajectory"


def _shorten(text: str) -> str:
    cut = len(text) - _KEEP_HEAD - _KEEP_TAIL
    return f"{text[:_KEEP_HEAD]}[… {cut:,} characters of this text cut …]{text[-_KEEP_TAIL:]}"


def _user_turns(steps: list[Step]) -> str:
    turns = [s for s in steps if s["kind"] == "message" and s.get("role") == "user"]
    if len(turns) <= 1:
        return turns[0]["text"] if turns else ""
    return "\n\n".join(f"[{s['index']}] {s['text']}" for s in turns)


def _marker(elided: list[Step]) -> str:
    calls = sum(1 for s in elided if s["kind"] == "tool_call")
    first, last = elided[0]["index"], elided[-1]["index"]
    noun = "step" if len(elided) == 1 else "steps"
    calls_text = f", {calls} tool call{'s' if calls != 1 else ''}" if calls else ""
    span = f"{first}" if first == last else f"{first}–{last}"
    return f"[… {noun} {span} elided: {len(elided)} {noun}{calls_text} …]"


def render(
    steps: list[Step],
    *,
    view: View = "final",
    reference: str | None = None,
    budget: int = DEFAULT_TOKEN_BUDGET,
    count: Counter = approx_tokens,
    texts: tuple[str, str, str] | None = None,
) -> RunView:
    """The run as the judge sees it in ``view``, within ``budget`` tokens (``count`` counts
    them for the judge model). ``texts`` are the run's stored (task, system, output) when the
    caller has them; else they come from the steps."""
    if view not in VIEWS:
        raise ValueError(f"judge view must be one of {', '.join(VIEWS)}, got {view!r}")
    task, system, output = texts if texts is not None else final_texts(steps)
    reference = reference or None
    base = RunView(
        view=view,
        task=task,
        system=system,
        output=output,
        reference=reference,
        user_turns=_user_turns(steps) if view != "final" else task,
        output_actions=_output_actions(steps) if view == "trajectory" else 0,
    )
    if view == "final":
        return _fit_blocks(base, budget, count, lines=[])
    shown = [s for s in steps if _in_view(s, view)]
    return _fit_transcript(base, shown, budget, count)


def _output_actions(steps: list[Step]) -> int:
    return sum(1 for s in steps if s.get("source") == "output" and s["kind"] != "message")


def _blocks_chars(v: RunView) -> int:
    return len(v.task) + len(v.system) + len(v.output) + len(v.reference or "")


def _fit_transcript(base: RunView, shown: list[Step], budget: int, count: Counter) -> RunView:
    lines = [step_line(s) for s in shown]
    total_chars = _blocks_chars(base) + sum(len(line) + 1 for line in lines)
    if total_chars <= budget * _CHARS_PER_TOKEN_FLOOR:
        return _done(base, shown, lines, {})  # fits whatever the tokenizer: nothing to count
    fixed = _blocks_tokens(base, count)
    used = fixed + count("\n".join(lines))
    if used <= budget:
        return _done(base, shown, lines, {})
    rendering: dict[str, Any] = {}
    if shortened := _shorten_long_results(shown, lines):
        rendering["shortened"] = shortened
        used = fixed + count("\n".join(lines))
    room = budget - fixed
    for _ in range(4):  # per-line costs are estimated from the whole; correct any overshoot
        if used <= budget:
            break
        joined = "\n".join(lines)
        ratio = count(joined) / max(len(joined), 1)
        costs = [int((len(line) + 1) * ratio) + 1 for line in lines]
        kept, kept_lines, elided = _elide(shown, lines, costs, room)
        if not elided:
            break
        candidate = fixed + count("\n".join(kept_lines))
        if candidate > budget:
            room -= candidate - budget  # tighten and elide again from the full list
            continue
        shown, lines, used = kept, kept_lines, candidate
        rendering["elided"] = elided
    if used > budget:  # the fixed blocks alone are over: shorten the longest of them
        transcript_tokens = used - fixed
        base, cut_blocks = _cut_blocks(base, budget - transcript_tokens, count)
        rendering["blocks_shortened"] = cut_blocks
        used = _blocks_tokens(base, count) + transcript_tokens
    rendering |= {"tokens": used, "budget": budget}
    return _done(base, shown, lines, rendering)


def _shorten_long_results(shown: list[Step], lines: list[str]) -> list[int]:
    """Shorten the lines of tool results over LONG_RESULT characters in place; their indexes."""
    shortened = []
    for n, step in enumerate(shown):
        if step["kind"] == "tool_result" and len(step.get("content", "")) > LONG_RESULT:
            lines[n] = step_line(step, _shorten(step["content"]))
            shortened.append(step["index"])
    return shortened


def _elide(
    shown: list[Step], lines: list[str], costs: list[int], room: int
) -> tuple[list[Step], list[str], list[dict[str, Any]]]:
    """Keep the steps up to and including the first user turn and as many of the most recent
    steps as fit in ``room`` tokens; the ones between become one marker line."""
    head = next(
        (n + 1 for n, s in enumerate(shown) if s["kind"] == "message" and s["role"] == "user"), 0
    )
    head_cost = sum(costs[:head])
    marker_cost = 40  # a marker line is short; a generous fixed allowance
    tail_room = room - head_cost - marker_cost
    start, spent = len(shown), 0
    while start > head and spent + costs[start - 1] <= tail_room:
        start -= 1
        spent += costs[start]
    # The last step (the agent's final turn) stays even when it alone is over the room.
    start = min(start, len(shown) - 1)
    elided = shown[head:start]
    if not elided:
        return shown, lines, []
    marker = _marker(elided)
    info = {
        "from": elided[0]["index"],
        "to": elided[-1]["index"],
        "steps": len(elided),
        "tool_calls": sum(1 for s in elided if s["kind"] == "tool_call"),
    }
    kept = shown[:head] + shown[start:]
    return kept, lines[:head] + [marker] + lines[start:], [info]


def _blocks_tokens(v: RunView, count: Counter) -> int:
    return sum(count(t) for t in (v.task, v.system, v.output, v.reference or "") if t)


def _cut_blocks(base: RunView, room: int, count: Counter) -> tuple[RunView, list[str]]:
    """Shorten the longest blocks (head and tail kept, the cut marked) until they fit."""
    names = ["output", "system", "task", "reference"]
    values = {n: getattr(base, n) or "" for n in names}
    cut: list[str] = []
    for _ in range(8):
        if sum(count(t) for t in values.values() if t) <= max(room, 0):
            break
        name = max(names, key=lambda n: len(values[n]))
        text = values[name]
        if len(text) <= _KEEP_HEAD + _KEEP_TAIL + 64:
            break
        keep = max(len(text) // 2, _KEEP_HEAD + _KEEP_TAIL)
        head, tail = keep * 3 // 4, keep // 4
        values[name] = (
            f"{text[:head]}[… {len(text) - head - tail:,} characters cut …]{text[-tail:]}"
        )
        if name not in cut:
            cut.append(name)
    changed = {n: values[n] for n in names if values[n] != (getattr(base, n) or "")}
    if "reference" in changed:
        changed["reference"] = changed["reference"] or None  # type: ignore[assignment]
    return _replace(base, **changed), cut


def _fit_blocks(base: RunView, budget: int, count: Counter, lines: list[str]) -> RunView:
    if _blocks_chars(base) <= budget * _CHARS_PER_TOKEN_FLOOR:
        return base
    tokens = _blocks_tokens(base, count)
    if tokens <= budget:
        return base
    fitted, cut = _cut_blocks(base, budget, count)
    rendering = {
        "blocks_shortened": cut,
        "tokens": _blocks_tokens(fitted, count),
        "budget": budget,
    }
    return _replace(fitted, rendering=rendering)


def _replace(v: RunView, **changes: Any) -> RunView:
    return replace(v, **changes)


def _done(base: RunView, shown: list[Step], lines: list[str], rendering: dict) -> RunView:
    return _replace(
        base,
        transcript="\n".join(lines),
        shown_steps=frozenset(s["index"] for s in shown),
        rendering=rendering,
    )


def run_view(
    *,
    view: View = "final",
    budget: int = DEFAULT_TOKEN_BUDGET,
    count: Counter = approx_tokens,
    task: str | None = None,
    output: Any = "",
    system: str | None = None,
    messages: Any = None,
    expected_output: str | None = None,
    steps: list[Step] | None = None,
) -> RunView:
    """What a scorer shows the judge, from whatever its caller has: stored ``steps`` (the
    server), or ``messages`` and ``output`` in any accepted shape, or the three texts alone.
    Texts given explicitly win over the ones read from the messages."""
    if steps is None:
        if messages is None:
            messages = [{"role": "system", "content": system}] if system else []
            messages += [{"role": "user", "content": task}] if task else []
        steps = normalise(messages, output)
    task_, system_, output_ = final_texts(steps)
    texts = (
        task if task is not None else task_,
        system if system is not None else system_,
        output if isinstance(output, str) else output_,
    )
    return render(
        steps, view=view, reference=expected_output, budget=budget, count=count, texts=texts
    )
