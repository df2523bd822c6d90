"""The New rubric page's "Draft criteria from my agent's system prompt": the judge drafts criteria
(reviews.services.drafting), shown as editable rows (wording, required, keep) with the part of
the prompt each comes from; "Add kept criteria" appends the kept rows to the Criteria box, as
lines the paste reads (optional ones tagged ``[optional]``). Nothing is saved here: the person
creates the rubric with the form. Works as a plain form post and as an htmx swap of the card."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import QueryDict

from evalsite.errors import AppError, FieldErrors, page_message
from reviews.services.drafting import criteria_draft
from teams.access import TeamRequest

DRAFT_OPS = ("draft", "draft_add")
MAX_ROWS = 20  # what the judge may answer (judge_engine.draft.MAX_CRITERIA)


@dataclass(frozen=True)
class DraftRow:
    description: str
    required: bool
    rationale: str
    keep: bool = True

    @property
    def line(self) -> str:
        text = " ".join(self.description.split())
        return text if self.required else f"[optional] {text}"


def posted_rows(post: QueryDict) -> list[DraftRow]:
    """The rows as the person left them (a row with an empty wording is dropped)."""
    try:
        count = min(max(int(post.get("draft_count", "0")), 0), MAX_ROWS)
    except ValueError:
        count = 0
    rows = []
    for i in range(count):
        description = post.get(f"draft-{i}-description", "").strip()[:5000]
        if description:
            rows.append(
                DraftRow(
                    description=description,
                    required=post.get(f"draft-{i}-required") == "on",
                    rationale=post.get(f"draft-{i}-rationale", "")[:1000],
                    keep=post.get(f"draft-{i}-keep") == "on",
                )
            )
    return rows


def criteria_with(text: str, rows: list[DraftRow]) -> str:
    """The Criteria box's text with the kept rows appended, one line each."""
    lines = [row.line for row in rows if row.keep]
    if not lines:
        return text
    return "\n".join([*([text.rstrip()] if text.strip() else []), *(f"- {x}" for x in lines)])


def draft_state(request: TeamRequest) -> dict[str, Any]:
    """What the page shows after a draft op: the rows, the error, and the Criteria box's new
    text (None: unchanged)."""
    post = request.POST
    state: dict[str, Any] = {
        "system_prompt": post.get("system_prompt", ""),
        "draft_rows": [],
        "draft_error": "",
        "draft_field_error": "",
        "draft_added": 0,
        "criteria_text": None,
    }
    if post.get("op") == "draft_add":
        rows = posted_rows(post)
        kept = [row for row in rows if row.keep]
        state["criteria_text"] = criteria_with(post.get("criteria_text", ""), rows)
        state["draft_added"] = len(kept)
        if not kept:
            state["draft_rows"] = rows
            state["draft_error"] = "No criterion is kept: tick Keep on the ones to add."
        return state
    try:
        drafted = criteria_draft(
            team=request.team, user=request.user, system_prompt=state["system_prompt"]
        )
    except FieldErrors as exc:
        state["draft_field_error"] = page_message(exc)
    except AppError as exc:
        state["draft_error"] = exc.message
    else:
        state["draft_rows"] = [DraftRow(**item) for item in drafted]
    return state
