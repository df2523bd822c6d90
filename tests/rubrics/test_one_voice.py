"""One limit, one message: the same over-long criterion (third in its list, on line 3 of a
paste) gets the same message on every surface that takes criteria."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from judge_engine.text import CRITERION_MAX_CHARS
from rubrics.models import Rubric
from runs.models import AgentRun
from tests.conftest import run_payload
from tests.page_helpers import signed_in
from tests.rubrics.test_views import draft_post

pytestmark = pytest.mark.django_db

LONG = "x" * 10_000
LINE = "Criterion on line 3 is 10,000 characters; the limit is 5,000."
ITEM = "Criterion 3 is 10,000 characters; the limit is 5,000."
PASTE = f"Mentions refund\nGives the order number\n{LONG}\n"
LISTED = [{"description": "Mentions refund"}, {"description": "Says thanks"}, {"description": LONG}]


def messages_of(response) -> list[str]:
    return [e["msg"] for e in response.json()["detail"]]


def test_the_limit_is_five_thousand_characters():
    assert CRITERION_MAX_CHARS == 5000


def test_the_new_rubric_form_names_the_line_and_keeps_the_text(teammate):
    response = signed_in(teammate).post(
        reverse("rubric_new"), {"name": "Long", "criteria_text": PASTE, "op": "create"}
    )

    assert LINE in response.content.decode() and LONG in response.content.decode()
    assert not Rubric.objects.exists()


def test_the_new_rubric_preview_flags_the_line_before_saving(teammate):
    response = signed_in(teammate).post(
        reverse("rubric_new"), {"name": "Long", "criteria_text": PASTE, "op": "preview"}
    )

    assert LINE in response.content.decode()
    assert 'style="overflow-wrap:anywhere"' in response.content.decode()


def test_the_editor_says_the_same_at_the_row(teammate, make_rubric):
    rubric = make_rubric()
    response = signed_in(teammate).post(
        reverse("rubric_criteria", args=[rubric.id]),
        draft_post(
            rubric,
            [("", "Mentions refund", True), ("", "Says thanks", True), ("", LONG, True)],
            "save",
        ),
    )

    assert ITEM in response.content.decode() and LONG in response.content.decode()
    assert rubric.versions.count() == 1


def test_the_editor_paste_preview_flags_the_line(teammate, make_rubric):
    rubric = make_rubric()
    response = signed_in(teammate).post(
        reverse("rubric_criteria", args=[rubric.id]),
        draft_post(rubric, [("", "Mentions refund", True)], "preview", import_text=PASTE),
    )

    assert LINE in response.content.decode()


def test_the_rubric_api_says_the_same_for_a_list_and_for_text(api):
    listed = api.post("/rubrics", {"name": "L", "criteria": LISTED})
    text = api.post("/rubrics", {"name": "T", "criteria": PASTE})

    assert listed.status_code == text.status_code == 422
    assert messages_of(listed) == [ITEM] and messages_of(text) == [LINE]
    assert [e["loc"] for e in listed.json()["detail"]] == [
        ["body", "payload", "criteria", 2, "description"]
    ]


def test_a_run_and_a_bulk_batch_carrying_the_criterion_say_the_same(api):
    payload = run_payload(request_context={"rubric": LISTED})
    single = api.post("/runs", payload)
    bulk = api.post("/runs/bulk", {"runs": [run_payload(external_id="b"), payload]})

    assert single.status_code == bulk.status_code == 422, (single.content, bulk.content)
    assert messages_of(single) == [ITEM]
    assert [e["message"] for e in bulk.json()["extra"]["errors"]] == [ITEM]
    assert not AgentRun.objects.exists()
    assert "function-wrap" not in json.dumps(bulk.json())
