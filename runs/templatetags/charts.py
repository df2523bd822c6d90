"""Server-rendered SVG charts: no JavaScript, no chart library, readable without CSS.

Every label is escaped (rubric names are user text). Each chart also carries a <title> and
an aria-label so screen readers get the gist; the numbers are in a table next to it.
"""

from __future__ import annotations

import math
from datetime import date
from typing import Any

from django import template
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

PALETTE = ("#4f46e5", "#0891b2", "#16a34a", "#d97706", "#db2777", "#7c3aed", "#0d9488", "#dc2626")
# Rubrics are told apart by more than colour: each series also has its own dash and marker.
DASHES = ("", "7 4", "2 3", "9 3 2 3")
MARKERS = ("circle", "square", "triangle", "diamond")
WIDTH, HEIGHT = 640, 220
PAD_LEFT, PAD_RIGHT, PAD_TOP, PAD_BOTTOM = 56, 12, 12, 28


@register.filter
def colour(index: int) -> str:
    return PALETTE[int(index) % len(PALETTE)]


def _marker(index: int, x: float, y: float, col: str, extra: str = "", r: float = 3.5) -> str:
    shape = MARKERS[index % len(MARKERS)]
    if shape == "circle":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r}" fill="{col}"{extra}'
    if shape == "square":
        return f'<rect x="{x - r:.1f}" y="{y - r:.1f}" width="{2 * r}" height="{2 * r}" fill="{col}"{extra}'
    if shape == "triangle":
        points = f"{x:.1f},{y - r - 1:.1f} {x + r + 1:.1f},{y + r:.1f} {x - r - 1:.1f},{y + r:.1f}"
    else:
        points = f"{x:.1f},{y - r - 1:.1f} {x + r + 1:.1f},{y:.1f} {x:.1f},{y + r + 1:.1f} {x - r - 1:.1f},{y:.1f}"
    return f'<polygon points="{points}" fill="{col}"{extra}'


def _close(shape_html: str) -> str:
    tag = shape_html[1 : shape_html.index(" ")]
    return f"</{tag}>"


@register.simple_tag
def series_swatch(index: int) -> SafeString:
    """The legend's sample of series ``index``: its colour, dash and marker."""
    i = int(index)
    col, dash = PALETTE[i % len(PALETTE)], DASHES[i % len(DASHES)]
    mark = _marker(i, 14, 6, col)
    return mark_safe(  # noqa: S308 - numbers and palette constants only
        f'<svg class="sw-line" width="28" height="12" viewBox="0 0 28 12" aria-hidden="true">'
        f'<line x1="1" y1="6" x2="27" y2="6" stroke="{col}" stroke-width="2" stroke-dasharray="{dash}"/>'
        f"{mark}/></svg>"
    )


def _x(i: int, n: int) -> float:
    span = WIDTH - PAD_LEFT - PAD_RIGHT
    return PAD_LEFT + (span * i / (n - 1) if n > 1 else span / 2)


def _slot_x(i: int, n: int) -> float:
    span = (WIDTH - PAD_LEFT - PAD_RIGHT) / max(n, 1)
    return PAD_LEFT + span * (i + 0.5)


def _y(value: float, top: float) -> float:
    span = HEIGHT - PAD_TOP - PAD_BOTTOM
    return PAD_TOP + span * (1 - (value / top if top else 0))


def _frame(
    days: list[date], top: float, fmt: Any, label: str, slots: bool = False, steps: int = 4
) -> list[str]:
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(label)}">',
        f"<title>{escape(label)}</title>",
        '<g class="grid axis">',
    ]
    for step in range(steps + 1):
        value = top * step / steps
        y = _y(value, top)
        parts.append(f'<line x1="{PAD_LEFT}" x2="{WIDTH - PAD_RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>')
        parts.append(
            f'<text x="{PAD_LEFT - 6}" y="{y + 3:.1f}" text-anchor="end">{escape(fmt(value))}</text>'
        )
    n = len(days)
    for i in sorted({0, n // 2, n - 1}) if n else []:
        anchor = "start" if i == 0 else "end" if i == n - 1 else "middle"
        x = _slot_x(i, n) if slots else _x(i, n)
        parts.append(
            f'<text x="{x:.1f}" y="{HEIGHT - 8}" text-anchor="{anchor}">{days[i]:%b %d}</text>'
        )
    parts.append("</g>")
    return parts


def _nice_step(value: float) -> float:
    """The smallest 1, 2 or 5 × 10^k at or above ``value``: round axis labels."""
    exponent = 10 ** math.floor(math.log10(value))
    return next(m * exponent for m in (1, 2, 5, 10) if m * exponent >= value)


def _nice_top(value: float) -> tuple[float, int]:
    """An axis top above ``value`` made of at most four round steps, and the step count."""
    if value <= 0:
        return 1.0, 4
    step = _nice_step(value / 4)
    steps = math.ceil(value / step)
    return step * steps, steps


def rolling(points: dict[date, tuple[int, int]], days: list[date], window: int) -> dict:
    """(passed, judged) summed over the ``window`` days ending on each day."""
    out = {}
    for i, day in enumerate(days):
        span = [points.get(d) for d in days[max(0, i - window + 1) : i + 1]]
        passed = sum(p[0] for p in span if p)
        judged = sum(p[1] for p in span if p)
        if judged:
            out[day] = (passed, judged)
    return out


def marker_text(mark: dict[str, Any]) -> str:
    """A version marker's words (its label and the legend's): "Support · Nov 03: v3 took over
    from v2"."""
    since = f" from v{mark['previous']}" if mark.get("previous") else ""
    return f"{mark['name']} · {mark['day']:%b %d}: v{mark['version']} took over{since}"


def _version_markers(days: list[date], markers: list[dict[str, Any]]) -> list[str]:
    """A dashed vertical rule on the day each version took over, labelled "v3" above the plot
    (text, not colour alone), focusable and named with its full words."""
    n, parts = len(days), ['<g class="version-marks">']
    if not markers:
        return []
    for mark in markers:
        if mark["day"] not in days:
            continue
        x = _x(days.index(mark["day"]), n)
        text = escape(marker_text(mark))
        # Its label reads left of the rule in the plot's right half, so it never runs off it.
        right = x > WIDTH / 2
        label_x, anchor = (x - 3, "end") if right else (x + 3, "start")
        parts.append(
            f'<g class="version-mark" tabindex="0" role="img" aria-label="{text}"><title>{text}</title>'
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{PAD_TOP}" y2="{HEIGHT - PAD_BOTTOM}" '
            f'stroke="#475569" stroke-width="1.5" stroke-dasharray="4 3"/>'
            f'<text x="{label_x:.1f}" y="{PAD_TOP + 10}" text-anchor="{anchor}" fill="#334155">'
            f"v{int(mark['version'])}</text></g>"
        )
    parts.append("</g>")
    return parts


@register.simple_tag
def pass_rate_chart(
    days: list[date],
    series: list[dict[str, Any]],
    window: int = 7,
    markers: list[dict[str, Any]] | None = None,
) -> SafeString:
    """One line per series (a rubric version: versions are never joined into one line): the
    share of judged runs that passed over the trailing ``window`` days (daily rates of a few
    runs jump too much to read). Stretches without any judged run leave a gap rather than a
    misleading zero. ``markers``: the days a version took over (trends.chart_data)."""
    if not series:
        return format_html('<div class="chart-empty">{}</div>', "No judged runs in this period.")
    label = "Pass rate per rubric version over time"
    if markers:
        label += "; " + "; ".join(marker_text(m) for m in markers)
    parts = _frame(days, 1.0, lambda v: f"{v:.0%}", label)
    # Points are focusable images with their value: the chart is a group, not one image.
    parts[0] = parts[0].replace('role="img"', 'role="group"')
    parts += _version_markers(days, markers or [])
    n = len(days)
    for index, s in enumerate(series):
        col = PALETTE[index % len(PALETTE)]
        dash = DASHES[index % len(DASHES)]
        last = None
        points = rolling(s["points"], days, window)
        path, dots = [], []
        pen_up = True
        for i, day in enumerate(days):
            point = points.get(day)
            if not point:
                pen_up = True
                continue
            x, y = _x(i, n), _y(point[0] / point[1], 1.0)
            path.append(f"{'M' if pen_up else 'L'}{x:.1f},{y:.1f}")
            pen_up = False
            text = (
                f"{escape(s['name'])} · {window} days to {day:%b %d}: "
                f"{point[0]}/{point[1]} passed ({point[0] / point[1]:.0%})"
            )
            shape = _marker(
                index, x, y, col, f' class="pt" tabindex="0" role="img" aria-label="{text}">'
            )
            dots.append(f"{shape}<title>{text}</title>{_close(shape)}")
            last = (x, y)
        parts.append(
            f'<path class="series" stroke="{col}" stroke-dasharray="{dash}" d="{" ".join(path)}"/>'
        )
        parts.extend(dots)
        if last:  # a direct label at the series' newest point
            parts.append(
                f'<text class="series-label" x="{last[0] - 8:.1f}" text-anchor="end" '
                f'y="{last[1] - 8 if last[1] > PAD_TOP + 14 else last[1] + 16:.1f}" '
                f'fill="{col}">{escape(s["name"][:24])}</text>'
            )
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every text above is escaped


@register.inclusion_tag("runs/_pass_rate_table.html")
def pass_rate_table(days: list[date], series: list[dict[str, Any]], window: int = 7) -> dict:
    """The pass-rate chart's numbers as a table: one row per day with a judged run in its
    window, one column per rubric."""
    rolled = [rolling(s["points"], days, window) for s in series]
    rows = []
    for day in days:
        cells = [r.get(day) for r in rolled]
        if any(cells):
            rows.append({"day": day, "cells": cells})
    return {"series": series, "rows": rows, "window": window}


@register.simple_tag
def column_chart(
    days: list[date],
    values: list[float],
    label: str,
    unit: str = "",
    narrow: bool = False,
    no_calls: str = "",
) -> SafeString:
    """Daily columns (judge tokens or cost). ``narrow`` enlarges the labels for a chart drawn
    at half width, so they stay readable. ``no_calls``: what to say when there were no judge
    calls at all (then a missing cost is not for want of a price)."""
    if not any(values):
        empty = no_calls or (
            "No judge cost recorded: neither your team (team settings, judge prices) nor "
            "litellm has a price for this judge model, so its cost is unknown."
            if unit == "$"
            else "No judge calls in this period."
        )
        return format_html('<div class="chart-empty">{}</div>', empty)
    top, steps = _nice_top(max(values))
    fmt = (lambda v: f"${v:,.2f}") if unit == "$" else _compact
    parts = _frame(days, top, fmt, label, slots=True, steps=steps)
    parts[0] = parts[0].replace('role="img"', 'role="group"')
    if narrow:
        parts[0] = parts[0].replace('class="chart"', 'class="chart narrow"')
    n = len(days)
    span = (WIDTH - PAD_LEFT - PAD_RIGHT) / max(n, 1)
    for i, (day, value) in enumerate(zip(days, values, strict=False)):
        if not value:
            continue
        y = _y(value, top)
        x = PAD_LEFT + span * i + span * 0.15
        shown = f"${value:,.4f}" if unit == "$" else f"{value:,.0f}"
        # The column's name says what it counts: "Judge tokens per day · Mar 12: 1,234".
        name = escape(f"{label} · {day:%b %d}: {shown}")
        parts.append(
            f'<rect class="col{" alt" if unit == "$" else ""}" x="{x:.1f}" y="{y:.1f}" width="{span * 0.7:.1f}" '
            f'height="{HEIGHT - PAD_BOTTOM - y:.1f}" rx="2" tabindex="0" role="img" '
            f'aria-label="{name}"><title>{name}</title></rect>'
        )
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every text above is escaped


def _compact(value: float) -> str:
    for size, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:.1f}".removesuffix(".0") + suffix
    return f"{value:.0f}"


@register.simple_tag
def marker_words(mark: dict[str, Any]) -> str:
    """A version marker's words for the legend (escaped by the template)."""
    return marker_text(mark)
