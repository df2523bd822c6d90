"""The editor's paste preview shows what each pasted line became (the shared text-form parser,
judge_engine.text.parse_lines): on the new-rubric page and in the draft editor."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from rubrics.models import Rubric
from tests.page_helpers import XSS, signed_in
from tests.rubrics.test_views import current_rows, draft_post

pytestmark = pytest.mark.django_db

PASTE = "\ufeff# Checklist\r\n- Greets the customer\r\nCites sources (optional)\r\n（選填）引用來源\r\n-\r\n"


def preview_items(page: str) -> list[tuple[str, str, str]]:
    """(line as written, required/optional, criterion) of every item of the preview list."""
    items = re.findall(r'<li data-testid="parsed-line">(.*?)</li>', page, re.S)
    out = []
    for item in items:
        source = re.search(r'<code class="source"[^>]*>(.*?)</code>', item, re.S)
        badge = re.search(r'class="badge badge-(required|optional)"', item)
        became = re.search(r'<span [^>]*data-testid="became"[^>]*>(.*?)</span>', item, re.S)
        assert source and badge and became, item
        out.append((source.group(1), badge.group(1), became.group(1)))
    return out


def test_the_new_rubric_preview_shows_each_line_as_written_and_the_criterion_it_became(owner):
    response = signed_in(owner).post(
        reverse("rubric_new"), {"name": "Support", "criteria_text": PASTE, "op": "preview"}
    )

    page = response.content.decode()
    assert response.status_code == 200
    assert preview_items(page) == [
        ("- Greets the customer", "required", "Greets the customer"),
        ("Cites sources (optional)", "optional", "Cites sources"),
        ("（選填）引用來源", "optional", "引用來源"),
    ]
    skipped = re.search(r'data-testid="skipped-lines"[^>]*>(.*?)</p>', page, re.S)
    assert skipped and "line 1 (a Markdown heading)" in skipped.group(1)
    assert "line 5 (only a list marker or a tag)" in skipped.group(1)
    assert not Rubric.objects.exists()


def test_the_htmx_preview_partial_shows_the_same_lines(owner):
    response = signed_in(owner).post(
        reverse("rubric_new"),
        {"name": "x", "criteria_text": "Cites sources (optional)", "op": "preview"},
        HTTP_HX_REQUEST="true",
    )

    assert preview_items(response.content.decode()) == [
        ("Cites sources (optional)", "optional", "Cites sources")
    ]


def test_creating_from_the_paste_keeps_what_the_preview_showed(owner, team):
    signed_in(owner).post(
        reverse("rubric_new"), {"name": "Support", "criteria_text": PASTE, "op": "create"}
    )

    rubric = Rubric.objects.get(team=team)
    assert current_rows(rubric) == [
        ("c1", "Greets the customer", True),
        ("c2", "Cites sources", False),
        ("c3", "引用來源", False),
    ]


def test_the_draft_editor_preview_shows_what_each_line_became(owner, make_rubric):
    rubric = make_rubric(criteria="- A")
    rows = [("c1", "A", True)]
    response = signed_in(owner).post(
        reverse("rubric_criteria", args=[rubric.id]),
        draft_post(rubric, rows, "preview", import_text="- B [optional]\n[optional] - C"),
    )

    assert preview_items(response.content.decode()) == [
        ("- B [optional]", "optional", "B"),
        ("[optional] - C", "optional", "C"),
    ]


def test_pasted_lines_are_escaped_in_the_preview(owner):
    response = signed_in(owner).post(
        reverse("rubric_new"),
        {"name": "x", "criteria_text": f"- {XSS} (optional)", "op": "preview"},
    )

    page = response.content.decode()
    assert XSS not in page
    assert preview_items(page) == [
        (
            "- &lt;script&gt;alert(1)&lt;/script&gt; (optional)",
            "optional",
            "&lt;script&gt;alert(1)&lt;/script&gt;",
        )
    ]
