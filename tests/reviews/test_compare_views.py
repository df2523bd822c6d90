"""The comparison page, "compare draft with current" from the editor, the gate panel, and
saving and publishing through the gate in the browser's forms (server side)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from reviews.models import Comparison, GateState
from reviews.services.gate import gate_set
from rubrics.models import RubricVersion, WorkingCopy
from tests.rubrics.test_views import draft_post

from .conftest import judge_pending
from .test_compare import DRAFT, labelled  # noqa: F401 - the fixture

ROWS = [(c["key"], c["description"], c["required"]) for c in DRAFT]


@pytest.fixture
def client_for(db):
    def make(user, enforce_csrf: bool = False) -> Client:
        client = Client(enforce_csrf_checks=enforce_csrf)
        client.force_login(user)
        return client

    return make


def _compare(client: Client, rubric: Any, rows=ROWS, n: str = "10") -> Any:
    url = reverse("reviews:compare_start", args=[rubric.id])
    return client.post(url, draft_post(rubric, rows, "compare", compare_n=n))


def test_compare_from_the_editor_opens_the_report_with_the_flips(
    client_for,
    teammate,
    rubric,
    labelled,  # noqa: F811
):
    _, failing = labelled
    client = client_for(teammate)
    response = _compare(client, rubric)
    comparison = Comparison.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("reviews:comparison", args=[comparison.pk])
    assert comparison.runs == 6 and not comparison.version_b.published
    judge_pending()
    page = client.get(response["Location"]).content.decode()
    assert page.count('data-testid="flip-link"') == 3
    for run in failing:
        assert reverse("run_detail", args=[run.pk]) in page
    csv = client.get(reverse("reviews:comparison_export", args=[comparison.pk, "csv"]))
    assert csv.status_code == 200 and csv.content.decode().count("\n") == 19


def test_criterion_text_on_the_comparison_page_is_escaped(
    client_for,
    teammate,
    rubric,
    labelled,  # noqa: F811
):
    rows = [*ROWS[:2], ("c3", 'Says "thanks" <script>alert(1)</script>', False)]
    client = client_for(teammate)
    page = client.get(_compare(client, rubric, rows)["Location"]).content.decode()
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page


def test_a_bad_sample_size_says_so_on_the_editor(client_for, teammate, rubric, labelled):  # noqa: F811
    response = _compare(client_for(teammate), rubric, n="0")
    assert response.status_code == 302 and not Comparison.objects.exists()
    page = client_for(teammate).get(response["Location"])
    assert page.status_code == 200


def test_another_teams_comparison_and_panel_are_404(
    client_for,
    teammate,
    stranger,
    rubric,
    labelled,  # noqa: F811
):
    location = _compare(client_for(teammate), rubric)["Location"]
    other = client_for(stranger)
    assert other.get(location).status_code == 404
    assert other.get(reverse("reviews:compare_panel", args=[rubric.id])).status_code == 404
    assert _compare(other, rubric).status_code == 404


def test_a_viewer_reads_the_panel_without_forms_and_cannot_compare(
    client_for,
    viewer,
    rubric,
    labelled,  # noqa: F811
):
    panel = client_for(viewer).get(reverse("reviews:compare_panel", args=[rubric.id]))
    assert panel.status_code == 200 and "Save gate" not in panel.content.decode()
    assert _compare(client_for(viewer), rubric).status_code == 403


def test_the_forms_need_the_csrf_token(client_for, teammate, rubric, labelled):  # noqa: F811
    client = client_for(teammate, enforce_csrf=True)
    assert _compare(client, rubric).status_code == 403
    url = reverse("reviews:gate_save", args=[rubric.id])
    assert client.post(url, {"min_agreement": "0.8"}).status_code == 403


def test_a_gate_without_labels_shows_how_to_label(client_for, teammate, rubric):
    url = reverse("reviews:gate_save", args=[rubric.id])
    response = client_for(teammate).post(url, {"min_agreement": "0.8"})
    assert response.status_code == 422
    assert "review queue" in response.content.decode()


def test_saving_in_the_editor_under_a_gate_checks_it_then_shows_the_failing_criteria(
    client_for,
    owner,
    teammate,
    rubric,
    labelled,  # noqa: F811
):
    gate_set(rubric=rubric, min_agreement=0.9)
    client = client_for(teammate)
    saved = client.post(
        reverse("rubric_criteria", args=[rubric.id]), draft_post(rubric, ROWS, "save")
    )
    assert saved.status_code == 302
    rubric.refresh_from_db()
    assert rubric.current_version.number == 1  # not published yet
    panel_url = reverse("reviews:compare_panel", args=[rubric.id])
    assert "checking the gate" in client.get(panel_url).content.decode()
    judge_pending()
    draft = RubricVersion.objects.get(rubric=rubric, published=False)
    publish_url = reverse("reviews:publish", args=[rubric.id, draft.number])
    client.post(publish_url)  # settles the check: failed, not published
    assert Comparison.objects.get().gate_state == GateState.FAILED
    panel = client.get(panel_url).content.decode()
    assert 'data-testid="gate-failing"' in panel and "c2" in panel
    assert "Publish anyway" not in panel  # teammates are not owners
    client.post(publish_url, {"override_reason": "because"})
    draft.refresh_from_db()
    assert not draft.published
    client_for(owner).post(publish_url, {"override_reason": "known wording issue"})
    draft.refresh_from_db()
    assert draft.published and "known wording issue" in draft.gate_note
    editor = client_for(owner).get(reverse("rubric_detail", args=[rubric.id])).content.decode()
    assert "published over the gate by olivia: known wording issue" in editor


def test_saving_in_the_editor_under_a_gate_ends_the_unsaved_edits(
    client_for,
    teammate,
    rubric,
    labelled,  # noqa: F811
):
    gate_set(rubric=rubric, min_agreement=0.9)
    client = client_for(teammate)
    edits = draft_post(rubric, ROWS, "") | {"judge_view": "final", "base_version": "1"}
    assert client.post(reverse("rubric_working_copy", args=[rubric.id]), edits).status_code == 200
    assert WorkingCopy.objects.filter(rubric=rubric, user=teammate).exists()

    saved = client.post(
        reverse("rubric_criteria", args=[rubric.id]), draft_post(rubric, ROWS, "save")
    )

    assert saved.status_code == 302 and RubricVersion.objects.filter(published=False).exists()
    assert not WorkingCopy.objects.exists()


def test_a_costly_comparison_asks_for_confirmation_like_a_re_score(
    client_for,
    teammate,
    team,
    rubric,
    labelled,  # noqa: F811
):
    from rubrics.services import rubric_update

    # A judge litellm has prices for, so the estimate has a cost (the fake judge has none).
    rubric_update(rubric=rubric, judge_model="openai/gpt-4o-mini")
    team.confirm_cost_above = 0
    team.save()
    client = client_for(teammate)

    asked = _compare(client, rubric)
    page = asked.content.decode()
    assert asked.status_code == 200 and "Confirm this comparison" in page
    assert 'data-testid="estimate"' in page and not Comparison.objects.exists()
    htmx = client.post(
        reverse("reviews:compare_start", args=[rubric.id]),
        draft_post(rubric, ROWS, "compare", compare_n="10"),
        headers={"HX-Request": "true"},
    )
    assert htmx.status_code == 200 and "<html" not in htmx.content.decode()  # the fragment

    confirmed = client.post(
        reverse("reviews:compare_start", args=[rubric.id]),
        draft_post(rubric, ROWS, "compare", compare_n="10") | {"confirm": "on"},
    )
    assert confirmed.status_code == 302 and Comparison.objects.count() == 1

    team.confirm_cost_above = 1000
    team.save()
    assert _compare(client, rubric).status_code == 302  # below the threshold: no question


# --- Compare, then save: the number the button shows is the number saved --------------------


def _button_number(page: str) -> int:
    found = re.search(
        r'data-testid="save-version">Save as version <span data-save-number>(\d+)<', page
    )
    assert found, "no save button"
    return int(found.group(1))


# What the browser's autosave posts besides the rows: the judge view as the form has it.
VIEW = {"judge_view": "final", "run_token_budget": "24000", "base_version": "1"}


def _versions(rubric: Any) -> list[tuple[int, bool]]:
    return list(rubric.versions.order_by("number").values_list("number", "published"))


def test_saving_the_compared_edits_makes_the_compared_draft_version_under_the_buttons_number(
    client_for,
    teammate,
    rubric,
    labelled,  # noqa: F811
):
    client = client_for(teammate)
    autosave = reverse("rubric_working_copy", args=[rubric.id])
    edits = draft_post(rubric, ROWS, "") | VIEW
    answer = client.post(autosave, edits).json()
    assert answer["save_number"] == 2, answer
    _compare(client, rubric)
    assert _versions(rubric) == [(1, True), (2, False)]  # the comparison's draft version

    page = client.get(reverse("rubric_detail", args=[rubric.id])).content.decode()
    shown = _button_number(page)  # the form shows the compared edits (restored)
    saved = client.post(
        reverse("rubric_criteria", args=[rubric.id]), draft_post(rubric, ROWS, "save")
    )

    assert saved.status_code == 302
    rubric.refresh_from_db()
    assert shown == 2 and rubric.current_version.number == 2
    assert _versions(rubric) == [(1, True), (2, True)]  # nothing else, nothing left a draft
    page = client.get(saved["Location"]).content.decode()
    assert "Saved as version 2." in page
    history = page.split('data-testid="versions"', 1)[1].split("</ul>", 1)[0]
    assert "draft version" not in history and history.count('class="num"') == 2
    assert not WorkingCopy.objects.exists()


def test_edits_changed_after_comparing_say_and_save_the_next_free_number(
    client_for,
    teammate,
    rubric,
    labelled,  # noqa: F811
):
    client = client_for(teammate)
    autosave = reverse("rubric_working_copy", args=[rubric.id])
    _compare(client, rubric)
    other = [*ROWS[:2], ("c3", 'Says "thank you"', False)]
    answer = client.post(autosave, draft_post(rubric, other, "") | VIEW).json()
    assert answer["save_number"] == 3  # v2 is the compared edits, not these
    revision = answer["revision"]
    back = draft_post(rubric, ROWS, "") | VIEW | {"revision": revision}
    assert client.post(autosave, back).json()["save_number"] == 2  # the compared edits again
    page = client.get(reverse("rubric_detail", args=[rubric.id])).content.decode()
    assert _button_number(page) == 2

    client.post(reverse("rubric_criteria", args=[rubric.id]), draft_post(rubric, other, "save"))

    rubric.refresh_from_db()
    assert rubric.current_version.number == 3
    assert _versions(rubric) == [(1, True), (2, False), (3, True)]


def test_a_save_under_a_number_the_button_no_longer_shows_is_refused_and_says_the_number(
    client_for,
    teammate,
    rubric,
    labelled,  # noqa: F811
):
    """Edits typed after the last autosave answered: the button still says 2, saving them
    makes 3. Nothing is saved under a number the user did not see; the page says 3."""
    client = client_for(teammate)
    _compare(client, rubric)
    other = [*ROWS[:2], ("c3", 'Says "thank you"', False)]
    save = reverse("rubric_criteria", args=[rubric.id])

    refused = client.post(save, draft_post(rubric, other, "save") | {"expected_number": "2"})

    assert refused.status_code == 200
    assert _versions(rubric) == [(1, True), (2, False)]
    page = refused.content.decode()
    assert "Saving these edits makes version 3" in page and _button_number(page) == 3
    saved = client.post(save, draft_post(rubric, other, "save") | {"expected_number": "3"})
    assert saved.status_code == 302
    assert _versions(rubric) == [(1, True), (2, False), (3, True)]


def test_saving_compared_edits_under_a_gate_checks_the_compared_draft_version(
    client_for,
    teammate,
    rubric,
    labelled,  # noqa: F811
):
    gate_set(rubric=rubric, min_agreement=0.9)
    client = client_for(teammate)
    edits = draft_post(rubric, ROWS, "") | VIEW
    client.post(reverse("rubric_working_copy", args=[rubric.id]), edits)
    _compare(client, rubric)
    page = client.get(reverse("rubric_detail", args=[rubric.id])).content.decode()
    assert _button_number(page) == 2

    saved = client.post(
        reverse("rubric_criteria", args=[rubric.id]), draft_post(rubric, ROWS, "save")
    )

    assert "Saved as draft version 2: checking the publishing gate" in (
        client.get(saved["Location"]).content.decode()
    )
    assert _versions(rubric) == [(1, True), (2, False)]  # the gate checks the compared one
