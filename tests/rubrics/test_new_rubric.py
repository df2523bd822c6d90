"""The New rubric page (server side): the judge view and token budget chosen at creation are
version 1's, and the form's unsaved edits are autosaved per team and user (the editor's
mechanism: WorkingCopy rows, compare-and-set revisions), shown again when the page opens and
ended by creating the rubric or discarding them."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils.html import escape

from rubrics.models import Rubric, WorkingCopy
from tests.page_helpers import XSS, signed_in

pytestmark = pytest.mark.django_db

CRITERIA = '- Mentions "refund"\n- [optional] Says thanks'


def _create(client, **extra: str):
    data = {"name": "Support", "criteria_text": CRITERIA, "op": "create"} | extra
    return client.post(reverse("rubric_new"), data)


def _autosave(client, **fields: str):
    data = {"judge_view": "final", "run_token_budget": "24000", "revision": ""} | fields
    return client.post(reverse("rubric_new_input"), data)


def test_the_judge_view_and_token_budget_chosen_at_creation_are_version_ones(owner):
    response = _create(signed_in(owner), judge_view="trajectory", run_token_budget="8000")

    assert response.status_code == 302
    version = Rubric.objects.get().current_version
    assert (version.number, version.judge_view, version.run_token_budget) == (
        1,
        "trajectory",
        8000,
    )
    assert version.criteria.count() == 2


def test_the_new_rubric_page_offers_the_editors_judge_views_and_the_budget(owner):
    page = signed_in(owner).get(reverse("rubric_new")).content.decode()

    for view in ("final", "conversation", "trajectory"):
        assert f'name="judge_view" value="{view}"' in page
    assert 'name="judge_view" value="final" checked' in page
    assert 'name="run_token_budget"' in page and 'value="24000"' in page


def test_a_budget_below_the_minimum_is_named_and_nothing_is_created(owner):
    response = _create(signed_in(owner), judge_view="conversation", run_token_budget="10")

    assert response.status_code == 200 and not Rubric.objects.exists()
    page = response.content.decode()
    assert 'name="judge_view" value="conversation" checked' in page
    assert "1,000" in page  # the limit, on the budget field


def test_typed_input_is_kept_and_the_page_opens_with_it(owner, teammate):
    client = signed_in(owner)
    answer = _autosave(
        client, name=f"Support {XSS}", criteria_text=CRITERIA, judge_view="trajectory"
    ).json()

    assert answer["state"] == "saved" and answer["label"].startswith("Unsaved edits saved")
    assert answer["edits"]["name"] == f"Support {XSS}"
    page = client.get(reverse("rubric_new")).content.decode()
    assert "You have unsaved edits from" in page
    assert escape(f"Support {XSS}") in page and XSS not in page
    assert escape(CRITERIA) in page
    assert 'name="judge_view" value="trajectory" checked' in page
    assert f'data-revision="{answer["revision"]}"' in page
    # Nobody else's page shows them, not even a teammate's.
    assert (
        "You have unsaved edits"
        not in signed_in(teammate).get(reverse("rubric_new")).content.decode()
    )


def test_creating_the_rubric_ends_the_unsaved_edits(owner):
    client = signed_in(owner)
    _autosave(client, name="Support", criteria_text=CRITERIA)

    assert _create(client).status_code == 302
    assert not WorkingCopy.objects.exists()


def test_discarding_opens_the_blank_page_again(owner):
    client = signed_in(owner)
    _autosave(client, name="Support")

    response = client.post(reverse("rubric_new_input_discard"), follow=True)

    page = response.content.decode()
    assert "Unsaved edits discarded." in page and "You have unsaved edits" not in page
    assert not WorkingCopy.objects.exists()


def test_the_blank_form_is_no_edits(owner):
    client = signed_in(owner)
    revision = _autosave(client, name="Support").json()["revision"]

    answer = _autosave(client, name="  ", revision=revision).json()

    assert answer["state"] == "clean" and not WorkingCopy.objects.exists()


def test_a_page_older_than_the_stored_edits_is_refused(owner):
    client = signed_in(owner)
    _autosave(client, name="Newer tab")

    response = _autosave(client, name="Older tab")  # rendered before any copy: no revision

    assert response.status_code == 409
    assert "newer input for a new rubric was saved" in response.json()["message"]
    assert WorkingCopy.objects.get().state["name"] == "Newer tab"


def test_over_a_limit_is_a_422_naming_the_field(owner):
    response = _autosave(signed_in(owner), name="x" * 201)

    assert response.status_code == 422
    assert response.json()["extra"]["errors"] == {"name": "at most 200 characters (got 201)"}
    assert not WorkingCopy.objects.exists()


def test_each_team_keeps_its_own_input(owner, stranger, other_team):
    _autosave(signed_in(owner), name="Ours")

    assert signed_in(stranger).get(reverse("rubric_new_input")).status_code == 404
    assert _autosave(signed_in(stranger), name="Theirs").status_code == 200
    assert sorted(WorkingCopy.objects.values_list("state__name", flat=True)) == ["Ours", "Theirs"]


def test_viewers_keep_nothing(viewer):
    assert _autosave(signed_in(viewer), name="Nope").status_code == 403
    assert not WorkingCopy.objects.exists()
