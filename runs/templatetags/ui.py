"""Formatting filters for the dashboard, and Markdown that is safe to show.

Messages and agent output are untrusted: Markdown is rendered first, then sanitized by nh3
with an allow-list, so raw HTML in the source (``<script>``, ``onerror=``, ``javascript:``
links) never reaches the page as markup.
"""

from __future__ import annotations

import functools
import json
import threading
from typing import Any

import markdown as md
import nh3
from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from markdown.extensions import Extension

from judge_engine.rules import display_round
from judging.services.budget_wait import WAITING, budget_wait

register = template.Library()

ALLOWED_TAGS = {
    "p", "br", "hr", "strong", "em", "b", "i", "del", "code", "pre", "blockquote",
    "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6", "a",
    "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "th": {"align"}, "td": {"align"}}
MAX_MARKDOWN_CHARS = 200_000


class _RawHtmlAsText(Extension):
    """Raw HTML in the source is shown as text (escaped), not passed through: an agent's
    ``<script>`` must read as what it wrote, not vanish or run."""

    def extendMarkdown(self, md_instance: md.Markdown) -> None:  # noqa: N802 - Markdown's API
        md_instance.preprocessors.deregister("html_block")
        md_instance.inlinePatterns.deregister("html")


_converters = threading.local()


def _converter() -> md.Markdown:
    """This thread's Markdown converter: building one (loading its extensions) costs more
    than converting a message, and a run page converts hundreds of them."""
    converter = getattr(_converters, "md", None)
    if converter is None:
        converter = md.Markdown(
            extensions=[_RawHtmlAsText(), "fenced_code", "tables", "sane_lists"]
        )
        _converters.md = converter
    return converter


# Short texts (a run's turns) are rendered once per process and reused: a 500-step run has
# ~170 of them, and a pending run's page re-renders every 2 s. Bounded: at most 1,024 entries
# of at most 4,000 characters each.
CACHED_MARKDOWN_CHARS = 4_000


@register.filter
def markdown(text: Any) -> SafeString:
    """Render Markdown, then sanitize the HTML with an allow-list."""
    source = text if isinstance(text, str) else json.dumps(text, indent=2, ensure_ascii=False)
    source = source[:MAX_MARKDOWN_CHARS]
    html = _clean_cached(source) if len(source) <= CACHED_MARKDOWN_CHARS else _clean(source)
    return mark_safe(html)  # noqa: S308 - sanitized by nh3 in _clean


def _clean(source: str) -> str:
    return nh3.clean(
        _converter().reset().convert(source),
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )


_clean_cached = functools.lru_cache(maxsize=1_024)(_clean)


@register.filter
def message_text(content: Any) -> str:
    """A message's content as text: strings as they are, content parts joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") if isinstance(p, dict) else str(p) for p in content]
        return "\n\n".join(p for p in parts if p)
    return json.dumps(content, indent=2, ensure_ascii=False)


@register.filter
def pct(value: Any, digits: int = 0) -> str:
    """A 0–1 fraction as a percentage, rounded half up (judge_engine.rules.display_round)."""
    if value is None:
        return "—"
    digits = int(digits)
    return f"{display_round(float(value) * 100, digits):.{digits}f}%"


@register.filter
def width(value: Any) -> str:
    """A 0–1 fraction as a CSS percentage, clamped."""
    if value is None:
        return "0"
    return f"{max(0.0, min(1.0, float(value))) * 100:.1f}"


@register.filter
def ratio(part: Any, whole: Any) -> float | None:
    try:
        return float(part) / float(whole) if whole else None
    except (TypeError, ValueError):
        return None


@register.filter
def num(value: Any, digits: int = 2) -> str:
    """A score for display: rounded half up to ``digits`` decimals (0.625 shows as 0.63), by
    the engine's one display rounding (judge_engine.rules.display_round)."""
    if value is None:
        return "—"
    digits = int(digits)
    return f"{display_round(float(value), digits):.{digits}f}"


@register.filter
def short_num(value: Any) -> str:
    """``num`` without trailing zeros: a scale of 10 shows as 10, of 2.5 as 2.5."""
    text = num(value)
    return text.rstrip("0").rstrip(".") if "." in text else text


@register.filter
def cost(value: Any) -> str:
    if value is None:
        return "—"
    value = float(value)
    if value == 0:
        return "$0"
    return f"${value:.4f}" if value < 1 else f"${value:,.2f}"


@register.filter
def ms(value: Any) -> str:
    if value is None:
        return "—"
    value = float(value)
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.0f} ms"


@register.filter
def quality(value: Any) -> str:
    """good / mid / bad for a 0–1 score, for bar colours."""
    if value is None:
        return ""
    value = float(value)
    return "good" if value >= 0.8 else "mid" if value >= 0.6 else "bad"


# One colour per alignment band everywhere (home chart, run page badge, evaluation history):
# the engine's bands (judge_engine.rules.BANDS), two by two, best first.
BAND_TONES = {
    "excellent": "good",
    "very good": "good",
    "good": "mid",
    "moderate": "mid",
    "poor": "bad",
    "very poor": "bad",
}
# Pass-rate bars: green from 80 %, amber from 50 %, red below (a 56 % rubric is amber).
PASS_RATE_TONES = ((0.8, "good"), (0.5, "mid"))


@register.filter
def band_tone(band: Any) -> str:
    """good / mid / bad for an alignment band label."""
    return BAND_TONES.get(str(band or "").lower(), "")


@register.filter
def pass_tone(rate: Any) -> str:
    """good / mid / bad for a pass rate (0–1)."""
    if rate is None:
        return ""
    return next((tone for floor, tone in PASS_RATE_TONES if float(rate) >= floor), "bad")


@register.filter
def shortid(value: Any) -> str:
    return str(value)[:8]


@register.filter
def pretty_json(value: Any) -> str:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


@register.filter
def get(mapping: Any, key: Any) -> Any:
    try:
        return mapping.get(key)
    except AttributeError:
        return None


@register.simple_tag(takes_context=True)
def status_badge(context: Any, status: str, label: str = "") -> str:
    """A status as a badge; over budget reads "Waiting for budget — resumes <when>"
    (budget_wait_label), without the live dot: it waits, it is not being judged."""
    dot = (
        mark_safe('<span class="dot" aria-hidden="true"></span>')  # noqa: S308 - constant markup
        if status in ("queued", "running")
        else ""
    )
    if status == "over_budget" and not label:
        label = budget_wait_label(context)
    return format_html(
        '<span class="badge badge-{}">{}{}</span>',
        status,
        dot,
        label or status.replace("_", " ").capitalize(),
    )


@register.simple_tag(takes_context=True)
def budget_wait_label(context: Any) -> str:
    """The words "Waiting for budget — resumes <when>" for the caller's team
    (judging.services.budget_wait), computed once per request however many rows show it."""
    request = context.get("request")
    team = getattr(request, "team", None)
    if team is None:
        return WAITING
    wait = getattr(request, "_budget_wait", None)
    if wait is None:
        wait = request._budget_wait = budget_wait(team_id=team.pk)
    return wait.label


@register.simple_tag
def passed_badge(passed: Any) -> str:
    if passed is None:
        return format_html('<span class="badge">{}</span>', "Not judged")
    if passed:
        return format_html(
            '<span class="badge badge-pass"><span class="mark">✓</span> {}</span>', "Passed"
        )
    return format_html(
        '<span class="badge badge-fail"><span class="mark">✗</span> {}</span>', "Failed"
    )


@register.simple_tag(takes_context=True)
def query_with(context: Any, **changes: Any) -> str:
    """The current query string with some parameters replaced (None or "" removes them)."""
    params = context["request"].GET.copy()
    for key, value in changes.items():
        params.pop(key, None)
        if value not in (None, ""):
            params[key] = value
    encoded = params.urlencode()
    return f"?{encoded}" if encoded else "?"


DIMENSIONS = (
    ("intent", "Intent"),
    ("requirements", "Requirements"),
    ("completeness", "Completeness"),
    ("appropriateness", "Appropriateness"),
)


@register.filter
def alignment_dimensions(breakdown: Any) -> list[dict[str, Any]]:
    """Each dimension of one perspective with its score, weight and contribution
    (weight × score), for the bars on the run page."""
    weights = breakdown.weights or {}
    rows = []
    for key, label in DIMENSIONS:
        score = getattr(breakdown, f"{key}_score")
        weight = float(weights.get(key, 0))
        rows.append(
            {
                "key": key,
                "label": label,
                "score": score,
                "weight": weight,
                "contribution": weight * score,
            }
        )
    return rows


@register.filter
def role_label(role: str) -> str:
    return {"system": "System", "user": "User", "assistant": "Assistant"}.get(
        role, str(role).capitalize()
    )


@register.filter
def output_messages(output: Any) -> list[dict[str, Any]]:
    """A run's output (a string, or a list of strings and assistant messages) as messages."""
    if output in (None, "", []):
        return []
    items = output if isinstance(output, list) else [output]
    out = []
    for item in items:
        if isinstance(item, dict):
            out.append({"role": item.get("role") or "assistant", "content": item.get("content")})
        else:
            out.append({"role": "assistant", "content": item})
    return out


@register.filter
def ago(value: Any) -> str:
    """A compact age for dense tables: "45s ago", "3h ago", "2d ago", then the date."""
    from django.utils import timezone

    if not value:
        return "—"
    seconds = (timezone.now() - value).total_seconds()
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= size:
            count = int(seconds // size)
            return f"{count}{unit} ago" if unit != "d" or count < 7 else f"{value:%b %d}"
    return f"{max(0, int(seconds))}s ago"
