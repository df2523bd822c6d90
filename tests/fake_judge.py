"""A fake OpenAI-compatible judge server with deterministic answers and faults.

Tests, end-to-end runs with real Celery workers, benchmarks and the demo
(`make run`) point litellm at it with model ``openai/<anything>``,
``api_base=<url>`` and ``api_key="fake"``, so litellm's real HTTP path runs.
It is a DEMO judge: its verdicts are string matching, not judgement.

How it reads a request
----------------------
* What is asked comes from ``response_format.json_schema``: a schema with a
  ``verdicts`` property is a rubric call, one with ``intent`` an alignment call
  (the schema name containing ``system`` selects the system perspective).
  Without a schema (``json_object`` mode) the system message text decides.
* The prompt is the FIRST user message (a repair re-ask appends messages, the
  prompt stays first). Its blocks are the ones judge_engine.prompts writes:
  the system message names the request's boundary (``Boundary of this request:
  <hex>``), and only tags carrying it count: ``<task-B>``,
  ``<system_prompt-B>``, ``<output-B>`` (each closed by the first
  ``</tag-B>``) and ``<criteria-B>`` holding one JSON object
  ``{"id": …, "criterion": …}`` per line. Anything else inside a block (other
  tags, ``[c1] …`` lines) is that block's text, as for a real model.
  A request whose system message names no boundary is read in the older
  layout (``<task>`` … ``</task>``, ``[<id>] <description>`` criterion lines),
  which bench/judge_overhead.py still sends.

Deterministic answers
---------------------
* Rubric: a criterion is satisfied iff every double-quoted phrase in its
  description occurs (case-insensitively) in the output text; a criterion with
  no quoted phrase is satisfied unless the output contains ``[[unsatisfied]]``.
  When the prompt has a ``<transcript-B>`` block (conversation and trajectory
  views), the output and the transcript are searched, and each verdict cites as
  ``evidence`` the step numbers (``[n]`` lines) mentioning a quoted phrase, or
  exactly the numbers of a ``[[cite:N,M]]`` marker in the criterion.
* Alignment: the reference text is the task (user perspective) or the system
  prompt (system perspective). Requirements are the reference's sentences; one
  is fulfilled when at least half of its words (3+ letters) occur in the
  output. requirements score = completeness score = fulfilled / total (1.0
  when there is none); intent = 0.9 when the output shares a word with the
  reference, else 0.2; appropriateness = 0.8 for a non-empty output, else 0.
  ``[[scores:I,R,C,A]]`` inside the reference text forces the four scores.

* Suggested criterion edit (a schema with ``rationale``, or the system message of
  judge_engine/suggest.py): the ``<criterion-B>`` block's criterion with its double quotes
  dropped (``reword``), split at its first " and " (``[[suggest:split]]`` in the criterion),
  or a grading instruction quoting the first reviewer note (``[[suggest:instruction]]``); the
  rationale names the runs of the ``<disagreements-B>`` block. ``[[judge:malformed]]`` (in a
  reviewer's note, say) answers text that is not JSON, ``[[judge:wrong_type]]`` a kind that
  is not one of the three.

* Criteria drafted from a system prompt (a schema with ``criteria``, or the system message of
  judge_engine/draft.py): one criterion per sentence of the ``<system_prompt-B>`` block that
  says must, never, always, only, do not or don't (required) or should, try to, ideally or
  prefer (optional), the sentence itself as the description and quoted as the rationale; one
  optional criterion when none says so. ``[[judge:wrong_type]]`` answers ``required`` as a
  string, ``[[judge:duplicate]]`` gives the first criterion twice.

Faults and latency (markers anywhere in the request's message texts)
--------------------------------------------------------------------
``[[judge:F]]`` with F in 429 (``Retry-After: 1``; ``[[judge:429:S]]`` sends
S instead), 500, 400, 401, timeout (sleeps 3600 s without blocking others),
malformed (content that is not JSON), missing (drops the last asked
criterion), extra (adds an id that was not asked), duplicate, out_of_range
(alignment scores of 5), wrong_type (``satisfied`` / ``score`` as strings).
A suffix ``xN`` (``[[judge:429x2]]``) faults only the first N requests whose
system message and first user message are the same, then answers normally.
Keying on those two messages, not the whole list, is deliberate: a repair
re-ask appends messages, and ``malformedx1`` must let the repair succeed.
``[[latency:0.5]]`` overrides the server-wide latency for one request.

Endpoints: ``POST /v1/chat/completions`` (and ``/chat/completions``),
``GET /_stats``, ``POST /_reset``, ``POST /_config`` ``{"latency": s}``,
``GET /_last`` (the last completion request body). In process, ``credentials()`` lists
the credential headers (Authorization, x-api-key, ...) each completion request carried, and
``user_agents()`` their User-Agent headers.

Usage: ``with FakeJudge(latency=0.0) as judge: judge.url`` in-process, or
``python -m tests.fake_judge --port 8765 --latency 0.2`` as a process.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import re
import threading
import time
import uuid
from collections import Counter
from typing import Any

from aiohttp import web

FAULTS = (
    "429",
    "500",
    "400",
    "401",
    "timeout",
    "malformed",
    "missing",
    "extra",
    "duplicate",
    "out_of_range",
    "wrong_type",
)
FAULT_RE = re.compile(r"\[\[judge:(" + "|".join(FAULTS) + r")(?:x(\d+))?(?::([\d.]+))?\]\]")
LATENCY_RE = re.compile(r"\[\[latency:([\d.]+)\]\]")
# ``[[tag:NAME]]`` in a request (say in a criterion): its requests in flight are counted apart.
TAG_RE = re.compile(r"\[\[tag:(\w+)\]\]")
SCORES_RE = re.compile(r"\[\[scores:([\d.]+),([\d.]+),([\d.]+),([\d.]+)\]\]")
CRITERION_RE = re.compile(r"^\[([^\]\s]+)\]\s+(.*)$")
BOUNDARY_RE = re.compile(r"Boundary of this request: ([0-9a-f]+)")
STEP_RE = re.compile(r"^\[(\d+)\] ")
CITE_RE = re.compile(r"\[\[cite:([\d,]*)\]\]")
QUOTED_RE = re.compile(r'"([^"]+)"')
WORD_RE = re.compile(r"[a-z0-9]{3,}")
SENTENCE_RE = re.compile(r"[^.!?\n]+")
SUGGEST_KIND_RE = re.compile(r"\[\[suggest:(split|instruction|reword)\]\]")
# The suggested-edit prompt's system message says this (judge_engine/suggest.py).
SUGGEST_SYSTEM_MARK = "propose ONE concrete edit"
# The drafted-criteria prompt's system message says this (judge_engine/draft.py).
DRAFT_SYSTEM_MARK = "Draft the rubric's criteria"
DEMANDS_RE = re.compile(r"\b(must|never|always|only|do not|don't)\b", re.IGNORECASE)
WISHES_RE = re.compile(r"\b(should|try to|ideally|prefer)\b", re.IGNORECASE)
TIMEOUT_SLEEP = 3600.0
CREDENTIAL_HEADERS = ("authorization", "x-api-key", "api-key", "x-goog-api-key")


# --- reading the request -------------------------------------------------


def content_text(content: Any) -> str:
    """Text of an OpenAI message content: a string or a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def first_user_text(messages: list[dict]) -> str:
    return next((content_text(m.get("content")) for m in messages if m.get("role") == "user"), "")


def boundary_of(messages: list[dict]) -> str | None:
    """The boundary the (first) system message names, None for the older layout."""
    system = next(
        (content_text(m.get("content")) for m in messages if m.get("role") == "system"), ""
    )
    found = BOUNDARY_RE.search(system)
    return found.group(1) if found else None


def section(prompt: str, tag: str, boundary: str | None = None) -> str:
    """The text of a block: between ``<tag-B>`` and the first ``</tag-B>`` after it. Without a
    boundary (older layout), between ``<tag>`` and the LAST ``</tag>`` (outputs may quote tags)."""
    if boundary is None:
        start, end = prompt.find(f"<{tag}>"), prompt.rfind(f"</{tag}>")
        opening = f"<{tag}>"
    else:
        opening = f"<{tag}-{boundary}>"
        start = prompt.find(opening)
        end = prompt.find(f"</{tag}-{boundary}>", start + len(opening)) if start >= 0 else -1
    if start < 0 or end < start:
        return ""
    return prompt[start + len(opening) : end].strip()


def asked_criteria(prompt: str, boundary: str | None = None) -> list[tuple[str, str]]:
    """(id, description) of each criterion asked: the JSON lines of the criteria block."""
    if boundary is None:
        block = section(prompt, "criteria") or prompt
        found = (CRITERION_RE.match(line.strip()) for line in block.splitlines())
        return [(m.group(1), m.group(2)) for m in found if m]
    items = (json.loads(line) for line in section(prompt, "criteria", boundary).splitlines())
    return [(item["id"], item["criterion"]) for item in items]


def request_kind(body: dict) -> tuple[str, str]:
    """("rubric" | "alignment" | "suggest", perspective) from the schema or system text."""
    fmt = body.get("response_format") or {}
    spec = fmt.get("json_schema") or {}
    props = (spec.get("schema") or {}).get("properties") or {}
    if props:
        if "criteria" in props:
            return "draft", ""
        if "rationale" in props:
            return "suggest", ""
        kind = "rubric" if "verdicts" in props else "alignment"
        return kind, "system" if "system" in spec.get("name", "") else "user"
    system = " ".join(
        content_text(m.get("content")) for m in body["messages"] if m.get("role") == "system"
    )
    if SUGGEST_SYSTEM_MARK in system:
        return "suggest", ""
    if DRAFT_SYSTEM_MARK in system:
        return "draft", ""
    kind = "rubric" if '"verdicts"' in system else "alignment"
    return kind, "system" if "system perspective" in system.lower() else "user"


def fault_key(messages: list[dict], fault: str) -> str:
    head = [m for m in messages if m.get("role") == "system"][:1] + [
        m for m in messages if m.get("role") == "user"
    ][:1]
    raw = json.dumps([fault, head], sort_keys=True, default=str)
    boundary = boundary_of(messages)
    if boundary:  # a fresh boundary per prompt: the same question asked again is the same
        raw = raw.replace(boundary, "BOUNDARY")
    return hashlib.sha256(raw.encode()).hexdigest()


# --- deterministic answers ------------------------------------------------


def words(text: str) -> set[str]:
    return set(WORD_RE.findall(text.lower()))


def rubric_verdict(criterion_id: str, description: str, output: str) -> dict:
    phrases = QUOTED_RE.findall(description)
    low = output.lower()
    if phrases:
        absent = [p for p in phrases if p.lower() not in low]
        satisfied = not absent
        why = (
            "output never mentions " + ", ".join(f'"{p}"' for p in absent)
            if absent
            else ("output mentions " + ", ".join(f'"{p}"' for p in phrases))
        )
    else:
        satisfied = "[[unsatisfied]]" not in low
        why = (
            "output is marked [[unsatisfied]]"
            if not satisfied
            else "nothing in the output contradicts it"
        )
    return {"criterion_id": criterion_id, "satisfied": satisfied, "reasoning": why}


def transcript_steps(transcript: str) -> dict[int, str]:
    """Step number -> its text, from the transcript block's ``[n] ...`` lines (a step's text
    continues on the lines after it until the next ``[n]``)."""
    steps: dict[int, str] = {}
    current: int | None = None
    for line in transcript.splitlines():
        found = STEP_RE.match(line)
        if found:
            current = int(found.group(1))
            steps[current] = line
        elif current is not None:
            steps[current] += "\n" + line
    return steps


def cited_steps(description: str, steps: dict[int, str]) -> list[int]:
    """The steps a verdict cites: ``[[cite:N,M]]`` in the criterion forces them (any numbers,
    so tests can send out-of-range ones), else the steps mentioning a quoted phrase."""
    forced = CITE_RE.search(description)
    if forced:
        return [int(n) for n in forced.group(1).split(",") if n.strip()]
    phrases = [p.lower() for p in QUOTED_RE.findall(description)]
    return [n for n, text in steps.items() if any(p in text.lower() for p in phrases)]


def rubric_answer(prompt: str, fault: str | None, boundary: str | None = None) -> dict:
    output = section(prompt, "output", boundary)
    asked = asked_criteria(prompt, boundary)
    transcript = section(prompt, "transcript", boundary) if boundary else ""
    if not transcript:
        verdicts = [rubric_verdict(cid, desc, output) for cid, desc in asked]
    else:  # conversation / trajectory views: judge the whole run, cite its steps
        steps = transcript_steps(transcript)
        verdicts = []
        for cid, desc in asked:
            verdict = rubric_verdict(cid, desc, output + "\n" + transcript)
            verdict["evidence"] = cited_steps(desc, steps)
            verdicts.append(verdict)
    if fault == "missing" and verdicts:
        verdicts.pop()
    elif fault == "extra":
        verdicts.append({"criterion_id": "not-asked", "satisfied": True, "reasoning": "extra"})
    elif fault == "duplicate" and verdicts:
        verdicts.append(dict(verdicts[0]))
    elif fault == "wrong_type":
        for verdict in verdicts:
            verdict["satisfied"] = "yes"
    met = sum(v["satisfied"] is True for v in verdicts)
    return {"verdicts": verdicts, "overall_assessment": f"{met} of {len(verdicts)} criteria met"}


def requirement_rows(reference: str, output_words: set[str]) -> list[dict]:
    rows = []
    for sentence in SENTENCE_RE.findall(SCORES_RE.sub("", reference)):
        needed = words(sentence)
        if not needed:
            continue
        fulfilled = len(needed & output_words) * 2 >= len(needed)
        why = (
            "most of its words appear in the output"
            if fulfilled
            else "the output barely touches it"
        )
        rows.append({"requirement": sentence.strip(), "fulfilled": fulfilled, "reasoning": why})
    return rows


def alignment_scores(reference: str, output: str, rows: list[dict]) -> tuple[float, ...]:
    forced = SCORES_RE.search(reference)
    if forced:
        return tuple(float(g) for g in forced.groups())
    share = sum(r["fulfilled"] for r in rows) / len(rows) if rows else 1.0
    intent = 0.9 if words(reference) & words(output) else 0.2
    return intent, share, share, 0.8 if output.strip() else 0.0


def alignment_answer(
    prompt: str, perspective: str, fault: str | None, boundary: str | None = None
) -> dict:
    reference = section(prompt, "system_prompt" if perspective == "system" else "task", boundary)
    output = section(prompt, "output", boundary)
    rows = requirement_rows(reference, words(output))
    intent, reqs, complete, fit = alignment_scores(reference, output, rows)
    if fault == "out_of_range":
        intent = reqs = complete = fit = 5.0
    answer = {
        "intent": {
            "score": intent,
            "primary_intent": SCORES_RE.sub("", reference).strip().split("\n", 1)[0][:80],
            "is_addressed": intent >= 0.5,
            "reasoning": "the output shares vocabulary with the request"
            if intent >= 0.5
            else "off topic",
        },
        "requirements": {"requirements": rows, "score": reqs},
        "completeness": {
            "score": complete,
            "missing_elements": [r["requirement"] for r in rows if not r["fulfilled"]],
            "reasoning": f"{sum(r['fulfilled'] for r in rows)} of {len(rows)} requirements covered",
        },
        "appropriateness": {
            "score": fit,
            "format_aligned": True,
            "tone_aligned": True,
            "reasoning": "non-empty answer" if fit else "empty answer",
        },
        "overall_assessment": f"{perspective} perspective judged by the fake judge",
    }
    if fault == "wrong_type":
        answer["intent"]["score"] = "high"
    return answer


def suggest_answer(prompt: str, fault: str | None, boundary: str | None) -> dict:
    """A suggested edit of the criterion block's criterion, from the disagreements block's
    JSON lines. ``[[suggest:split]]`` / ``[[suggest:instruction]]`` in the criterion pick the
    kind (default: reword, which drops the criterion's double quotes, so the fake judge stops
    demanding the quoted phrase verbatim)."""
    criterion = section(prompt, "criterion", boundary)
    lines = section(prompt, "disagreements", boundary).splitlines()
    items = [json.loads(line) for line in lines if line.strip()]
    runs = [item["run"] for item in items]
    notes = [n for item in items for n in item.get("reviewer_notes", [])]
    chosen = SUGGEST_KIND_RE.search(criterion)
    kind = chosen.group(1) if chosen else "reword"
    plain = SUGGEST_KIND_RE.sub("", criterion).strip()
    if kind == "split":
        first, _, second = plain.partition(" and ")
        text = f"{first.strip()}\n{second.strip() or 'States it plainly'}"
    elif kind == "instruction":
        text = (
            f"When grading {plain!r}, follow the reviewers: {notes[0] if notes else 'be lenient'}"
        )
    else:
        text = plain.replace('"', "") if '"' in plain else f"{plain} (as the reviewers read it)"
    answer = {
        "kind": "rewrite" if fault == "wrong_type" else kind,
        "text": text,
        "rationale": f"Reviewers disagreed with the judge on {len(runs)} runs: {', '.join(runs)}",
    }
    return answer


def draft_answer(prompt: str, fault: str | None, boundary: str | None) -> dict:
    """Criteria from the system prompt block's sentences that demand or recommend something."""
    text = section(prompt, "system_prompt", boundary)
    criteria = []
    for raw in SENTENCE_RE.findall(text):
        sentence = " ".join(raw.split())
        required = bool(DEMANDS_RE.search(sentence))
        if not (required or WISHES_RE.search(sentence)) or "[[judge:" in sentence:
            continue
        description = sentence[:1].upper() + sentence[1:]
        rationale = f'The system prompt says: "{sentence}"'
        criteria.append({"description": description, "required": required, "rationale": rationale})
    if not criteria:
        criteria = [
            {
                "description": "Answers the user's request",
                "required": False,
                "rationale": "The system prompt states no explicit demand",
            }
        ]
    if fault == "wrong_type":
        criteria[0]["required"] = "yes"
    if fault == "duplicate":
        criteria.append(dict(criteria[0]))
    return {"criteria": criteria[:20]}


def completion_body(model: str, content: str, prompt_chars: int) -> dict:
    return {
        "id": f"chatcmpl-fake-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_chars // 4,
            "completion_tokens": len(content) // 4,
            "total_tokens": prompt_chars // 4 + len(content) // 4,
        },
    }


def error_response(
    status: int, message: str, kind: str, headers: dict | None = None
) -> web.Response:
    body = {"error": {"message": message, "type": kind, "param": None, "code": str(status)}}
    return web.json_response(body, status=status, headers=headers)


# --- the server -----------------------------------------------------------


class JudgeState:
    """Counters, fault memory and settings of one fake judge server."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.stopping = asyncio.Event()
        self.reset()

    def reset(self) -> None:
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0  # the most requests it was answering at once
        # The same per ``[[tag:NAME]]`` found in the request.
        self.in_flight_by: Counter[str] = Counter()
        self.max_in_flight_by: Counter[str] = Counter()
        self.completions = 0
        self.criteria_judged = 0
        self.suggestions = 0  # suggested-edit requests answered
        self.drafts = 0  # drafted-criteria requests answered
        self.by_fault: Counter[str] = Counter()
        self.fault_hits: Counter[str] = Counter()
        self.last: dict | None = None
        # The credential headers of every completion request, in order.
        self.credentials: list[dict[str, str]] = []
        # The User-Agent of every completion request, in order (which HTTP client sent it).
        self.user_agents: list[str] = []

    def stats(self) -> dict:
        return {
            "requests": self.requests,
            "max_in_flight": self.max_in_flight,
            "max_in_flight_by": dict(self.max_in_flight_by),
            "completions": self.completions,
            "criteria_judged": self.criteria_judged,
            "by_fault": dict(self.by_fault),
        }

    def pick_fault(self, messages: list[dict], text: str) -> tuple[str | None, str | None]:
        """The first marker whose ``xN`` budget is not spent, consuming one use."""
        for match in FAULT_RE.finditer(text):
            fault, limit, arg = match.groups()
            if limit is not None:
                key = fault_key(messages, fault)
                if self.fault_hits[key] >= int(limit):
                    continue
                self.fault_hits[key] += 1
            self.by_fault[fault] += 1
            return fault, arg
        return None, None


async def sleep_or_stop(state: JudgeState, seconds: float) -> None:
    if seconds > 0:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(state.stopping.wait(), seconds)


def transport_fault(fault: str | None, arg: str | None) -> web.Response | None:
    if fault == "429":
        retry_after = arg or "1"
        return error_response(
            429, "Rate limit reached (fake judge)", "rate_limit_error", {"Retry-After": retry_after}
        )
    if fault == "500":
        return error_response(500, "The fake judge had an internal error", "server_error")
    if fault == "400":
        return error_response(400, "Invalid request (fake judge)", "invalid_request_error")
    if fault == "401":
        return error_response(
            401, "Incorrect API key provided (fake judge)", "invalid_request_error"
        )
    return None


async def chat_completions(request: web.Request) -> web.Response:
    state: JudgeState = request.app["state"]
    tag = TAG_RE.search(await request.text())  # the body is kept: read again below
    name = tag.group(1) if tag else ""
    state.in_flight += 1
    state.max_in_flight = max(state.max_in_flight, state.in_flight)
    state.in_flight_by[name] += 1
    state.max_in_flight_by[name] = max(state.max_in_flight_by[name], state.in_flight_by[name])
    try:
        return await _chat_completions(request, state)
    finally:
        state.in_flight -= 1
        state.in_flight_by[name] -= 1


async def _chat_completions(request: web.Request, state: JudgeState) -> web.Response:
    body = await request.json()
    messages = body.get("messages") or []
    all_text = "\n".join(content_text(m.get("content")) for m in messages)
    state.requests += 1
    state.last = body
    state.credentials.append(
        {k.lower(): v for k, v in request.headers.items() if k.lower() in CREDENTIAL_HEADERS}
    )
    state.user_agents.append(request.headers.get("User-Agent", ""))
    fault, arg = state.pick_fault(messages, all_text)
    override = LATENCY_RE.search(all_text)
    await sleep_or_stop(state, float(override.group(1)) if override else state.latency)
    if fault == "timeout":
        await sleep_or_stop(state, TIMEOUT_SLEEP)
        return error_response(504, "fake judge gave up", "timeout")
    failure = transport_fault(fault, arg)
    if failure is not None:
        return failure
    return answer(state, body, messages, fault)


def answer(state: JudgeState, body: dict, messages: list[dict], fault: str | None) -> web.Response:
    prompt = first_user_text(messages)
    boundary = boundary_of(messages)
    kind, perspective = request_kind(body)
    if kind == "rubric":
        state.criteria_judged += len(asked_criteria(prompt, boundary))
        content = json.dumps(rubric_answer(prompt, fault, boundary))
    elif kind == "suggest":
        state.suggestions += 1
        content = json.dumps(suggest_answer(prompt, fault, boundary))
    elif kind == "draft":
        state.drafts += 1
        content = json.dumps(draft_answer(prompt, fault, boundary))
    else:
        content = json.dumps(alignment_answer(prompt, perspective, fault, boundary))
    if fault == "malformed":
        content = "I think the output is fine, mostly. {not json"
    state.completions += 1
    prompt_chars = sum(len(content_text(m.get("content"))) for m in messages)
    return web.json_response(
        completion_body(body.get("model", "fake-judge"), content, prompt_chars)
    )


async def get_stats(request: web.Request) -> web.Response:
    return web.json_response(request.app["state"].stats())


async def post_reset(request: web.Request) -> web.Response:
    request.app["state"].reset()
    return web.json_response({"ok": True})


async def post_config(request: web.Request) -> web.Response:
    body = await request.json()
    if "latency" in body:
        request.app["state"].latency = float(body["latency"])
    return web.json_response({"latency": request.app["state"].latency})


async def get_last(request: web.Request) -> web.Response:
    return web.json_response(request.app["state"].last)


def make_app(latency: float = 0.0) -> web.Application:
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app["state"] = JudgeState(latency)
    app.router.add_post("/v1/chat/completions", chat_completions)
    app.router.add_post("/chat/completions", chat_completions)
    app.router.add_get("/_stats", get_stats)
    app.router.add_post("/_reset", post_reset)
    app.router.add_post("/_config", post_config)
    app.router.add_get("/_last", get_last)
    return app


async def start_site(app: web.Application, host: str, port: int) -> tuple[web.AppRunner, str]:
    """Start serving; returns the runner and the base URL (ending in ``/v1``)."""
    # handler_cancellation: a client that gives up (timeout) frees its handler.
    runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=1.0, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port, backlog=1024)
    await site.start()
    bound_port = runner.addresses[0][1]
    return runner, f"http://{host}:{bound_port}/v1"


class FakeJudge:
    """The fake judge on its own event loop in a daemon thread (127.0.0.1)."""

    def __init__(self, latency: float = 0.0) -> None:
        self.app = make_app(latency)
        self.url = ""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="fake-judge", daemon=True
        )
        self._runner: web.AppRunner | None = None

    @property
    def state(self) -> JudgeState:
        return self.app["state"]

    def _call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=30)

    def start(self) -> FakeJudge:
        self._thread.start()
        self._runner, self.url = self._call(start_site(self.app, "127.0.0.1", 0))
        return self

    def stop(self) -> None:
        if self._runner is not None:
            self._loop.call_soon_threadsafe(self.state.stopping.set)
            self._call(self._runner.cleanup())
            self._runner = None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    async def _read(self, fn: Any) -> Any:
        return fn()

    def stats(self) -> dict:
        return self._call(self._read(self.state.stats))

    def reset(self) -> None:
        self._call(self._read(self.state.reset))

    def last_request(self) -> dict | None:
        return self._call(self._read(lambda: self.state.last))

    def suggestions(self) -> int:
        """How many suggested-edit requests it answered (with an edit or a fault's content)."""
        return self._call(self._read(lambda: self.state.suggestions))

    def drafts(self) -> int:
        """How many drafted-criteria requests it answered."""
        return self._call(self._read(lambda: self.state.drafts))

    def credentials(self) -> list[dict[str, str]]:
        """The credential headers (Authorization, x-api-key, ...) of each completion request."""
        return self._call(self._read(lambda: list(self.state.credentials)))

    def user_agents(self) -> list[str]:
        """The User-Agent header of each completion request (which HTTP client sent it)."""
        return self._call(self._read(lambda: list(self.state.user_agents)))

    def set_latency(self, seconds: float) -> None:
        def change() -> None:
            self.state.latency = seconds

        self._call(self._read(change))

    def __enter__(self) -> FakeJudge:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


async def serve(host: str, port: int, latency: float) -> None:
    runner, url = await start_site(make_app(latency), host, port)
    print(url, flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Fake OpenAI-compatible judge (demo / tests).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument(
        "--latency", type=float, default=0.0, help="seconds added to every completion"
    )
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.host, args.port, args.latency))


if __name__ == "__main__":
    main()
