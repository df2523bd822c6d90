"""The New rubric page's "Draft criteria from my agent's system prompt" (server side): the judge
(the fake one over HTTP) drafts editable rows, as a plain post and as an htmx swap; the kept
rows, as edited, go into the Criteria box; nothing is saved until the person creates the
rubric; errors show on the page, never a 500; a viewer cannot draft."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils.html import escape

from reviews.models import CriteriaDraft
from rubrics.models import Rubric
from tests.page_helpers import XSS, signed_in

pytestmark = pytest.mark.django_db

PROMPT = "You must ask for the order number. Never promise a refund date. You should say thanks."


def _draft(client, htmx: bool = False, **extra: str):
    data = {"op": "draft", "system_prompt": PROMPT, "judge_view": "final"} | extra
    headers = {"HX-Request": "true"} if htmx else {}
    return client.post(reverse("rubric_new"), data, headers=headers)


def test_drafting_before_naming_the_rubric_shows_editable_rows_and_no_form_error(owner, fake_judge):
    response = _draft(signed_in(owner), description="Kept as typed")

    assert response.status_code == 200
    page = response.content.decode()
    assert 'name="draft-0-description"' in page
    assert escape("You must ask for the order number") in page
    assert 'name="draft-0-required" checked' in page  # "must": required
    assert 'name="draft-2-required">' in page  # "should": optional
    assert page.count('-keep" checked') == 3
    assert "Why: The system prompt says" in page
    assert "This field is required" not in page  # no name yet: not an error while drafting
    assert "Kept as typed" in page  # the other fields as typed
    assert not Rubric.objects.exists()


def test_the_htmx_draft_answers_the_card_alone(owner, fake_judge):
    response = _draft(signed_in(owner), htmx=True)

    page = response.content.decode()
    assert page.lstrip().startswith('<div class="card" id="criteria-draft"')
    assert "<html" not in page and 'name="draft-1-description"' in page


def test_kept_rows_as_edited_go_into_the_criteria_box_and_the_rubric_is_created_from_them(
    owner, fake_judge
):
    client = signed_in(owner)
    added = client.post(
        reverse("rubric_new"),
        {
            "op": "draft_add",
            "name": "Support",
            "criteria_text": '- Mentions "refund"',
            "draft_count": "3",
            "draft-0-description": "Asks for the order number first",
            "draft-0-required": "on",
            "draft-0-keep": "on",
            "draft-1-description": "Never promise a refund date",
            "draft-1-required": "on",  # not kept: removed
            "draft-2-description": "Says thanks",
            "draft-2-keep": "on",  # kept, optional
        },
    )
    page = added.content.decode()
    text = '- Mentions "refund"\n- Asks for the order number first\n- [optional] Says thanks'
    assert escape(text) in page
    assert "2 criteria added to the Criteria box" in page
    assert not Rubric.objects.exists()  # still nothing saved

    created = client.post(
        reverse("rubric_new"),
        {"op": "create", "name": "Support", "criteria_text": text, "judge_view": "final"},
    )
    assert created.status_code == 302
    criteria = Rubric.objects.get().current_version.criteria.order_by("position")
    assert [(c.description, c.required) for c in criteria] == [
        ('Mentions "refund"', True),
        ("Asks for the order number first", True),
        ("Says thanks", False),
    ]


def test_no_kept_row_says_so_and_keeps_the_rows(owner, fake_judge):
    data = {"op": "draft_add", "draft_count": "1", "draft-0-description": "Says thanks"}
    page = signed_in(owner).post(reverse("rubric_new"), data).content.decode()

    assert "No criterion is kept" in page and 'name="draft-0-description"' in page


def test_an_empty_prompt_or_a_failing_judge_is_said_on_the_page(owner, fake_judge):
    client = signed_in(owner)
    empty = _draft(client, system_prompt=" ")
    assert empty.status_code == 200
    assert "paste the agent&#x27;s system prompt" in empty.content.decode()

    broken = _draft(client, system_prompt=f"{PROMPT} [[judge:malformed]]")
    assert broken.status_code == 200
    assert "the judge&#x27;s answer was not usable criteria" in broken.content.decode()
    assert CriteriaDraft.objects.filter(status="failed").count() == 1


def test_what_the_prompt_and_the_judge_say_is_escaped(owner, fake_judge):
    page = _draft(signed_in(owner), system_prompt=f"You must {XSS}.").content.decode()

    assert XSS not in page and escape(XSS) in page


def test_a_viewer_cannot_draft(viewer, fake_judge):
    assert _draft(signed_in(viewer)).status_code == 403
    assert fake_judge.drafts() == 0
