"""Turning rubric text and run messages into the plain values the scorers take.

Pure functions: the rubric editor's paste box, the API and the scorers share them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .types import CriteriaSource, Criterion

# One leading list marker, which only counts when whitespace or the end of the line follows it:
# that rule keeps "1.5 GB limit respected" and "*emphasis* text" intact. Checkboxes come first
# so "- [ ] x" loses the whole "- [ ]" rather than just the dash.
_MARKER = re.compile(
    r"""^(?:
        [-*+•]\s+\[[ xX]\]      # - [ ] / - [x] checkbox
      | [-*+•]                  # bullet
      | \d{1,9}[.)]             # 1.  1)
      | [A-Za-z][)]             # a)
      | \(\d{1,9}\)             # (1)
    )(?=\s|$)""",
    re.VERBOSE,
)
_HEADING = re.compile(r"^#{1,6}(?:\s|$)")
# The optional / required tag (SCORING.md "Text form"): the word in ASCII or full-width
# brackets or parentheses. Only the listed words count; ASCII ones in any case.
_TAG_WORD = r"\s*(optional|required|可選|可选|選填|选填)\s*"
_TAG_BODY = "|".join(
    rf"{re.escape(left)}{_TAG_WORD}{re.escape(right)}"
    for left, right in (
        ("[", "]"),
        ("(", ")"),
        ("［", "］"),
        ("（", "）"),
        ("【", "】"),
        ("「", "」"),
    )
)
_LEADING_TAG = re.compile(rf"^(?:{_TAG_BODY})\s*", re.IGNORECASE)
_TRAILING_TAG = re.compile(rf"(?:{_TAG_BODY})$", re.IGNORECASE)  # the caller strips
# Lines end at \n, \r\n or \r only. Python's splitlines also ends them at these (form feed,
# vertical tab, file/group/record separators, NEL, line and paragraph separators); here they
# stay inside the line, as spaces.
_LINE_END = re.compile(r"\r\n|\r|\n")
_OTHER_SEPARATORS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_BOM = "\ufeff"
# Why a line gives no criterion (ParsedLine.skipped), in words a preview can show.
BLANK, HEADING, NO_TEXT = "a blank line", "a Markdown heading", "only a list marker or a tag"
_TEXT_PART_TYPES = {None, "text", "input_text", "output_text"}

# The longest criterion description: one limit for every surface (forms, editor, paste preview,
# API single and bulk, a run's own rubric), each reporting it with criterion_too_long.
CRITERION_MAX_CHARS = 5000


def criterion_too_long(description: str, *, position: int, line: int | None = None) -> str | None:
    """The one message for an over-long criterion (None when it fits): ``position`` is the
    1-based criterion, ``line`` the line of a pasted list it came from."""
    size = len(description)
    if size <= CRITERION_MAX_CHARS:
        return None
    where = f"on line {line}" if line is not None else str(position)
    return f"Criterion {where} is {size:,} characters; the limit is {CRITERION_MAX_CHARS:,}."


def criteria_text_too_long(text: str) -> str | None:
    """The message for the first over-long criterion of a pasted list, naming its line."""
    for position, line in enumerate(
        (x for x in parse_lines(text) if x.description is not None), start=1
    ):
        if problem := criterion_too_long(
            line.description or "", position=position, line=line.number
        ):
            return problem
    return None


@dataclass(frozen=True)
class ParsedLine:
    """One line of the text form and what it became: a criterion (``description``,
    ``required``), or nothing, with ``skipped`` saying why (BLANK, HEADING or NO_TEXT)."""

    number: int  # 1-based
    text: str  # the line as written (its other separators shown as spaces)
    description: str | None = None
    required: bool = True
    skipped: str | None = None


def _lines(text: str) -> list[str]:
    return _LINE_END.split(_OTHER_SEPARATORS.sub(" ", text.removeprefix(_BOM)))


def _tag(pattern: re.Pattern[str], text: str) -> tuple[bool | None, str]:
    """(required, the text without the tag) when ``pattern`` finds a tag, else (None, text)."""
    found = pattern.search(text)
    if not found:
        return None, text
    word = next(g for g in found.groups() if g is not None)
    return word.lower() == "required", (text[: found.start()] + text[found.end() :]).strip()


def _line_text(line: str) -> tuple[str, bool] | str:
    """(description, required) of one line of the text form, or why it gives no criterion.

    The tag may lead before the list marker (``[optional] - B``), lead after it
    (``- [optional] B``) or trail at the very end (``- B (optional)``); one tag counts."""
    text = line.strip()
    if not text:
        return BLANK
    if _HEADING.match(text):
        return HEADING
    required, text = _tag(_LEADING_TAG, text)
    text = _MARKER.sub("", text, count=1).strip()
    if required is None:
        required, text = _tag(_LEADING_TAG, text)
    if required is None:
        required, text = _tag(_TRAILING_TAG, text)
    return (text, required is not False) if text else NO_TEXT


def parse_lines(text: str) -> list[ParsedLine]:
    """Every line of ``text`` and what the text form makes of it (the editor's paste preview
    shows this, so people see what each line became)."""
    out = []
    for number, line in enumerate(_lines(text), start=1):
        parsed = _line_text(line)
        if isinstance(parsed, str):
            out.append(ParsedLine(number, line, skipped=parsed))
        else:
            out.append(ParsedLine(number, line, description=parsed[0], required=parsed[1]))
    return out


def _criterion_from_line(line: str) -> Criterion | None:
    parsed = _line_text(line)
    if isinstance(parsed, str):
        return None
    return Criterion(description=parsed[0], required=parsed[1])


def count_criteria(text: str) -> int:
    """How many criteria ``parse_criteria(text)`` gives, without building them: several times
    cheaper, so a caller can hold text to a cap before parsing it."""
    return sum(1 for line in _lines(text) if not isinstance(_line_text(line), str))


def _with_positional_ids(criteria: list[Criterion]) -> list[Criterion]:
    """Give id-less criteria "c<position>" (1-based); a clash with an explicit id is an error."""
    # Sets, not list scans: this runs on every rubric write, so it must stay linear.
    explicit: set[str] = set()
    for c in criteria:
        if c.id is not None:
            if c.id in explicit:
                raise ValueError(f"criterion id {c.id!r} is used twice")
            explicit.add(c.id)
    out = []
    for position, criterion in enumerate(criteria, start=1):
        if criterion.id is None:
            new_id = f"c{position}"
            if new_id in explicit:
                raise ValueError(
                    f"criterion {position} has no id and its positional id {new_id!r} "
                    "is already taken by another criterion; give it an explicit id"
                )
            criterion = criterion.model_copy(update={"id": new_id})
        out.append(criterion)
    return out


def parse_criteria(text: str) -> list[Criterion]:
    """Parse newline-separated criteria (the "text form" of SCORING.md).

    Lines end at \\n, \\r\\n or \\r only (other separators stay in the line as spaces) and a
    leading byte order mark is dropped. Per line: one leading list marker (followed by
    whitespace) is removed, blank lines and Markdown headings are dropped, and an optional
    tag (``[optional]``, ``(optional)``, ``（選填）``, ``【可选】``, ...: see ``_TAG_BODY``) leading
    before or after the marker or trailing at the end makes the criterion optional
    (``[required]`` is accepted). Ids are "c1", "c2", ... by position.
    """
    parsed = (_criterion_from_line(line) for line in _lines(text))
    return _with_positional_ids([c for c in parsed if c is not None])


def _criterion_from_item(index: int, item: Any) -> Criterion:
    if isinstance(item, Criterion):
        return item
    if isinstance(item, str):
        item = {"description": item}
    if not isinstance(item, Mapping):
        raise ValueError(
            f"criterion {index}: expected an object or a string, got {type(item).__name__}"
        )
    description = item.get("description")
    if not isinstance(description, str):
        raise ValueError(f"criterion {index}: description must be a string")
    if not description.strip():
        raise ValueError(f"criterion {index}: description must not be blank")
    raw_id = item.get("id")
    return Criterion(
        id=None if raw_id is None else str(raw_id),
        description=description.strip(),
        required=item.get("required") is not False,
    )


def coerce_criteria(value: Any) -> list[Criterion]:
    """Criteria from text, a list of objects / strings / `Criterion`s, or None (no criteria).

    Objects need a string `description`; `required` defaults to true and only an explicit
    false makes a criterion optional. Raises ValueError naming the offending (0-based) index.
    """
    if value is None:
        return []
    if isinstance(value, str):
        return parse_criteria(value)
    if isinstance(value, list | tuple):
        return _with_positional_ids([_criterion_from_item(i, v) for i, v in enumerate(value)])
    raise ValueError(f"criteria must be text or a list, got {type(value).__name__}")


class CriteriaSourceError(ValueError):
    """A run's own rubric value (``source``: request_context, metadata or input) is not valid
    criteria."""

    def __init__(self, source: CriteriaSource, message: str) -> None:
        super().__init__(message)
        self.source = source


def _is_blank(value: Any) -> bool:
    return (
        value is None
        or (isinstance(value, str | list | tuple) and not value)
        or (isinstance(value, str) and not value.strip())
    )


def _rubric_value(container: Any) -> Any:
    """The ``rubric`` of a dict or of any mapping-like object (one with ``get``, such as the
    reference framework's request context), so such a context never silently counts as "no
    rubric" (SCORING.md "No criteria at all")."""
    if isinstance(container, Mapping):
        return container.get("rubric")
    get = getattr(container, "get", None)
    return get("rubric") if callable(get) and not isinstance(container, str | bytes) else None


def resolve_criteria(
    configured: Any,
    request_context: Any = None,
    metadata: Any = None,
    input: Any = None,  # noqa: A002 - the run's field is called input
) -> tuple[list[Criterion], CriteriaSource]:
    """Where a run's criteria come from (SCORING.md "Where criteria come from").

    The configured rubric wins when it has at least one criterion; otherwise the `rubric` value
    of the request context, then of the metadata, then of the input object. Empty or blank
    values (and text with no criterion in it) count as absent. Raises CriteriaSourceError (a
    ValueError naming where the value came from) for a present value that is not valid criteria.
    """
    candidates: list[tuple[CriteriaSource, Any]] = [
        ("configured", configured),
        ("request_context", _rubric_value(request_context)),
        ("metadata", _rubric_value(metadata)),
        ("input", _rubric_value(input)),
    ]
    for source, value in candidates:
        if _is_blank(value):
            continue
        try:
            criteria = coerce_criteria(value)
        except ValueError as exc:
            message = f"the rubric in the run's {source.replace('_', ' ')}: {exc}"
            raise CriteriaSourceError(source, message) from exc
        if criteria:
            return criteria, source
    return [], "none"


# --- Run messages ------------------------------------------------------------------------------


def content_text(content: Any) -> str:
    """Text of a message content: a string, or OpenAI-style parts whose text parts are joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            part["text"]
            for part in content
            if isinstance(part, Mapping)
            and isinstance(part.get("text"), str)
            and part.get("type") in _TEXT_PART_TYPES
        ]
        return "\n".join(texts)
    return ""


def _message_text(message: Any) -> str:
    if isinstance(message, str):
        return message
    if isinstance(message, Mapping):
        text = content_text(message.get("content"))
        return text or content_text(message.get("text"))
    return ""


def _role(message: Any, default: str) -> str:
    return str(message.get("role") or default) if isinstance(message, Mapping) else default


def _as_list(messages: Any) -> list[Any]:
    if messages is None:
        return []
    if isinstance(messages, str | Mapping):
        return [messages]
    return list(messages)


def task_text(messages: Any) -> str:
    """The first user message's text ("" when there is none). Plain strings count as user turns."""
    for message in _as_list(messages):
        if _role(message, "user") == "user":
            return _message_text(message)
    return ""


def system_text(messages: Any) -> str:
    """Every non-empty system (or developer) message, joined by a blank line."""
    texts = (
        _message_text(m).strip()
        for m in _as_list(messages)
        if _role(m, "user") in ("system", "developer")
    )
    return "\n\n".join(t for t in texts if t)


def output_text(output: Any) -> str:
    """The output string, or the last assistant message with non-empty text in a list of them."""
    if isinstance(output, str):
        return output
    for message in reversed(_as_list(output)):
        if _role(message, "assistant") == "assistant":
            text = _message_text(message)
            if text.strip():
                return text
    return ""
