"""What the judge sees (judge view and token budget) is a rubric setting saved with each version:
services, the API, the editor page, the version diff, "try it" and team scoping."""

from __future__ import annotations

import pytest
from django.urls import reverse

from rubrics.models import DEFAULT_RUN_TOKEN_BUDGET, Rubric, RubricVersion
from rubrics.services import (
    RubricValidationError,
    rubric_create,
    rubric_set_criteria,
    rubric_set_judge_view,
    rubric_update,
)
from tests.api_client import field_locs
from tests.conftest import SUPPORT_CRITERIA
from tests.page_helpers import signed_in
from tests.rubrics.test_views import current_rows, draft_post

pytestmark = pytest.mark.django_db


def criteria_of(version: RubricVersion) -> list[tuple[str, str, bool]]:
    return [(c.key, c.description, c.required) for c in version.criteria.order_by("position")]


def view_of(version: RubricVersion) -> tuple[str, int]:
    return version.judge_view, version.run_token_budget


def versions(rubric: Rubric) -> list[int]:
    return list(rubric.versions.order_by("number").values_list("number", flat=True))


# --- Services ---------------------------------------------------------------------------------


def test_a_new_rubric_starts_with_the_final_view_and_the_default_budget(make_rubric):
    rubric = make_rubric()

    assert view_of(rubric.current_version) == ("final", DEFAULT_RUN_TOKEN_BUDGET)


def test_a_rubric_created_with_a_view_and_budget_keeps_them_in_version_one(make_rubric):
    rubric = make_rubric(judge_view="trajectory", run_token_budget=8000)

    assert rubric.current_version.number == 1
    assert view_of(rubric.current_version) == ("trajectory", 8000)


def test_changing_the_view_makes_a_new_version_with_the_same_criteria_and_keys(make_rubric):
    rubric = make_rubric(criteria="- A\n- B\n- [optional] C")
    rubric_set_criteria(rubric=rubric, criteria="- A\n- [optional] C")  # c2 gone: keys c1, c3
    v2 = rubric.current_version

    rubric_update(rubric=rubric, judge_view="trajectory")

    rubric.refresh_from_db()
    v3 = rubric.current_version
    assert v3.number == 3 and view_of(v3) == ("trajectory", DEFAULT_RUN_TOKEN_BUDGET)
    assert criteria_of(v3) == criteria_of(v2) == [("c1", "A", True), ("c3", "C", False)]
    assert v3.note == "Judge view: final → trajectory"
    v2.refresh_from_db()
    assert view_of(v2) == ("final", DEFAULT_RUN_TOKEN_BUDGET)


def test_changing_the_budget_makes_a_new_version_whose_note_names_both_numbers(make_rubric):
    rubric = make_rubric()

    version, created = rubric_set_judge_view(rubric=rubric, run_token_budget=8000)

    assert created and version.number == 2
    assert version.note == "Token budget: 24,000 → 8,000"
    assert view_of(version) == ("final", 8000)


def test_changing_view_and_budget_at_once_is_one_version(make_rubric):
    rubric = make_rubric()

    rubric_update(rubric=rubric, judge_view="conversation", run_token_budget=2000, scale=5)

    rubric.refresh_from_db()
    assert versions(rubric) == [1, 2] and rubric.scale == 5
    assert rubric.current_version.note == (
        "Judge view: final → conversation; Token budget: 24,000 → 2,000"
    )


def test_setting_the_same_view_and_budget_creates_nothing(make_rubric):
    rubric = make_rubric(judge_view="conversation", run_token_budget=5000)

    version, created = rubric_set_judge_view(
        rubric=rubric, judge_view="conversation", run_token_budget=5000
    )
    rubric_update(rubric=rubric, judge_view="conversation", name="Renamed")

    assert created is False and version.number == 1
    assert versions(rubric) == [1]


def test_a_criteria_edit_carries_the_view_and_budget_over(make_rubric):
    rubric = make_rubric(judge_view="trajectory", run_token_budget=3000)

    version, created = rubric_set_criteria(rubric=rubric, criteria="- Something new")

    assert created and view_of(version) == ("trajectory", 3000)
    assert version.note == ""


def test_a_criteria_edit_may_change_the_view_too(make_rubric):
    rubric = make_rubric(criteria="- A")

    same, created_same = rubric_set_criteria(rubric=rubric, criteria="- A", judge_view="final")
    changed, created = rubric_set_criteria(rubric=rubric, criteria="- A", judge_view="trajectory")

    assert created_same is False and same.number == 1
    assert created and changed.number == 2 and view_of(changed)[0] == "trajectory"
    assert criteria_of(changed) == [("c1", "A", True)]


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"judge_view": "sideways"}, "judge_view"),
        ({"judge_view": ""}, "judge_view"),
        ({"run_token_budget": 0}, "run_token_budget"),
        ({"run_token_budget": 999}, "run_token_budget"),
        ({"run_token_budget": 1_000_001}, "run_token_budget"),
        ({"run_token_budget": "24000"}, "run_token_budget"),
        ({"run_token_budget": 2500.5}, "run_token_budget"),
        ({"run_token_budget": True}, "run_token_budget"),
    ],
)
def test_a_bad_view_or_budget_is_refused_naming_the_field_and_writes_nothing(
    make_rubric, fields, field
):
    rubric = make_rubric()
    for write in (
        lambda: rubric_update(rubric=rubric, **fields),
        lambda: rubric_set_criteria(rubric=rubric, criteria="- Other", **fields),
        lambda: rubric_create(team=rubric.team, name="New", criteria="- A", **fields),
    ):
        with pytest.raises(RubricValidationError) as caught:
            write()
        assert list(caught.value.errors) == [field], caught.value.errors
    assert versions(rubric) == [1] and Rubric.objects.count() == 1


def test_the_budget_bounds_themselves_are_allowed(make_rubric):
    rubric = make_rubric(run_token_budget=1000)
    rubric_update(rubric=rubric, run_token_budget=1_000_000)

    rubric.refresh_from_db()
    assert [v.run_token_budget for v in rubric.versions.order_by("number")] == [1000, 1_000_000]


def test_a_rubric_without_criteria_takes_only_the_default_view_until_it_has_criteria(team):
    rubric = rubric_create(team=team, name="Empty", judge_view="final")
    assert rubric.current_version is None

    with pytest.raises(RubricValidationError) as caught:
        rubric_create(team=team, name="Empty 2", judge_view="trajectory")
    assert list(caught.value.errors) == ["judge_view"]
    with pytest.raises(RubricValidationError) as caught:
        rubric_update(rubric=rubric, run_token_budget=4000)
    assert list(caught.value.errors) == ["run_token_budget"]

    version, created = rubric_set_criteria(
        rubric=rubric, criteria="- A", judge_view="trajectory", run_token_budget=4000
    )
    assert created and version.number == 1 and view_of(version) == ("trajectory", 4000)
    assert version.note == ""


# --- API ----------------------------------------------------------------------------------------


def test_post_creates_version_one_with_the_view_and_budget(api):
    response = api.post(
        "/rubrics",
        {
            "name": "Agent",
            "criteria": SUPPORT_CRITERIA,
            "judge_view": "trajectory",
            "run_token_budget": 12000,
        },
    )

    assert response.status_code == 201, response.content
    version = response.json()["current_version"]
    assert (version["judge_view"], version["run_token_budget"]) == ("trajectory", 12000)


def test_post_without_them_gets_the_defaults(api):
    version = api.post("/rubrics", {"name": "Plain", "criteria": "- A"}).json()["current_version"]

    assert (version["judge_view"], version["run_token_budget"]) == ("final", 24000)


def test_patch_with_a_new_view_answers_with_the_new_current_version(api, make_rubric):
    rubric = make_rubric()
    before = api.get(f"/rubrics/{rubric.slug}").json()["current_version"]

    response = api.patch(f"/rubrics/{rubric.slug}", {"judge_view": "conversation"})

    assert response.status_code == 200, response.content
    version = response.json()["current_version"]
    assert version["number"] == 2 and version["judge_view"] == "conversation"
    assert version["note"] == "Judge view: final → conversation"
    assert version["criteria"] == before["criteria"]
    again = api.patch(f"/rubrics/{rubric.slug}", {"judge_view": "conversation"})
    assert again.json()["current_version"]["number"] == 2


def test_patch_of_the_budget_records_who_made_the_version(session_api, owner, make_rubric):
    rubric = make_rubric()

    response = session_api(owner).patch(f"/rubrics/{rubric.slug}", {"run_token_budget": 6000})

    assert response.status_code == 200, response.content
    rubric.refresh_from_db()
    assert rubric.current_version.created_by == owner
    assert rubric.current_version.run_token_budget == 6000


def test_put_criteria_carries_the_view_or_sets_a_new_one(api, make_rubric):
    rubric = make_rubric(judge_view="trajectory")
    url = f"/rubrics/{rubric.slug}/criteria"

    carried = api.put(url, {"criteria": "- Only one"})
    same = api.put(url, {"criteria": "- Only one", "judge_view": "trajectory"})
    changed = api.put(url, {"criteria": "- Only one", "run_token_budget": 2000})

    assert carried.status_code == 201 and carried.json()["judge_view"] == "trajectory"
    assert same.status_code == 200 and same.json()["number"] == 2
    assert changed.status_code == 201
    assert (changed.json()["judge_view"], changed.json()["run_token_budget"]) == (
        "trajectory",
        2000,
    )


def test_every_version_in_the_answers_shows_its_view_and_budget(api, make_rubric):
    rubric = make_rubric()
    rubric_update(rubric=rubric, judge_view="trajectory", run_token_budget=9000)

    items = api.get(f"/rubrics/{rubric.slug}/versions").json()["items"]
    one = api.get(f"/rubrics/{rubric.slug}/versions/1").json()

    assert [(v["number"], v["judge_view"], v["run_token_budget"]) for v in items] == [
        (2, "trajectory", 9000),
        (1, "final", 24000),
    ]
    assert (one["judge_view"], one["run_token_budget"]) == ("final", 24000)


BAD_VALUES = [
    ("run_token_budget", "24000"),
    ("run_token_budget", 0),
    ("run_token_budget", 10**12),
    ("run_token_budget", 2500.5),
    ("run_token_budget", None),
    ("judge_view", "sideways"),
    ("judge_view", None),
]


@pytest.mark.parametrize(("field", "value"), BAD_VALUES)
def test_bad_values_are_a_422_naming_the_field_on_post_patch_and_put(
    api, make_rubric, field, value
):
    rubric = make_rubric()
    post = api.post("/rubrics", {"name": "X", "criteria": "- A", field: value})
    patch = api.patch(f"/rubrics/{rubric.slug}", {field: value})
    put = api.put(f"/rubrics/{rubric.slug}/criteria", {"criteria": "- B", field: value})

    for response in (post, patch, put):
        assert [loc[-1] for loc in field_locs(response)] == [field]
    assert versions(rubric) == [1] and Rubric.objects.count() == 1


def test_a_view_for_a_rubric_without_criteria_is_a_422_on_the_field(api):
    created = api.post("/rubrics", {"name": "Empty", "judge_view": "trajectory"})
    empty = api.post("/rubrics", {"name": "Empty"})
    patched = api.patch("/rubrics/empty", {"run_token_budget": 3000})

    assert field_locs(created) == [["body", "payload", "judge_view"]]
    assert empty.status_code == 201
    assert field_locs(patched) == [["body", "payload", "run_token_budget"]]


def test_another_teams_rubric_is_a_404_and_gets_no_version(other_api, make_rubric):
    rubric = make_rubric()

    patch = other_api.patch(f"/rubrics/{rubric.id}", {"judge_view": "trajectory"})
    put = other_api.put(
        f"/rubrics/{rubric.id}/criteria", {"criteria": "- A", "judge_view": "trajectory"}
    )

    assert patch.status_code == 404 and put.status_code == 404
    assert versions(rubric) == [1]


def test_a_viewer_cannot_change_the_view(session_api, viewer, make_rubric):
    rubric = make_rubric()

    response = session_api(viewer).patch(f"/rubrics/{rubric.slug}", {"judge_view": "trajectory"})

    assert response.status_code == 403 and versions(rubric) == [1]


# --- The editor page ------------------------------------------------------------------------------


def save_post(rubric: Rubric, **view: str) -> dict:
    return draft_post(rubric, current_rows(rubric), "save", **view)


def test_the_editor_shows_the_three_views_explained_and_the_budget(owner, make_rubric):
    rubric = make_rubric(judge_view="conversation", run_token_budget=7000)

    response = signed_in(owner).get(reverse("rubric_detail", args=[rubric.id]))

    page = response.content.decode()
    assert "What the judge sees" in page
    assert "The task, the system prompt and the last answer." in page
    assert "Every user and assistant turn, in order." in page
    assert "Every turn plus every tool call and its result." in page
    assert 'name="judge_view" value="conversation" checked' in page
    assert 'name="judge_view" value="final">' in page
    assert 'name="run_token_budget" value="7000"' in page


def test_saving_the_draft_with_another_view_publishes_a_version_and_shows_the_diff(
    owner, make_rubric
):
    rubric = make_rubric()
    client = signed_in(owner)

    response = client.post(
        reverse("rubric_criteria", args=[rubric.id]),
        save_post(rubric, judge_view="trajectory", run_token_budget="16000"),
    )

    assert response.status_code == 302
    assert response["Location"].endswith("?a=1&b=2#history")
    rubric.refresh_from_db()
    assert view_of(rubric.current_version) == ("trajectory", 16000)
    assert rubric.current_version.created_by == owner
    page = client.get(response["Location"]).content.decode()
    assert 'data-testid="diff-judge_view"' in page and 'data-testid="diff-run_token_budget"' in page
    assert "<del>final</del> → <ins>trajectory</ins>" in page
    assert "<del>24,000</del> → <ins>16,000</ins> tokens" in page
    assert "same criteria" not in page


def test_saving_an_unchanged_draft_and_view_creates_nothing(owner, make_rubric):
    rubric = make_rubric(judge_view="conversation")

    signed_in(owner).post(
        reverse("rubric_criteria", args=[rubric.id]),
        save_post(rubric, judge_view="conversation", run_token_budget="24000"),
    )

    assert versions(rubric) == [1]


def test_a_draft_posted_without_the_view_fields_keeps_the_current_view(owner, make_rubric):
    rubric = make_rubric(judge_view="trajectory", run_token_budget=3000)
    rows = current_rows(rubric) + [("", "A new criterion", True)]

    signed_in(owner).post(
        reverse("rubric_criteria", args=[rubric.id]), draft_post(rubric, rows, "save")
    )

    rubric.refresh_from_db()
    assert rubric.current_version.number == 2
    assert view_of(rubric.current_version) == ("trajectory", 3000)


@pytest.mark.parametrize(
    ("view", "message"),
    [
        ({"run_token_budget": "0"}, "must be between 1,000 and 1,000,000 tokens (got 0)"),
        ({"run_token_budget": "lots"}, "Enter a whole number."),
        ({"run_token_budget": ""}, "This field is required."),
        ({"judge_view": "sideways"}, "Select a valid choice."),
    ],
)
def test_a_bad_view_or_budget_in_the_draft_is_shown_next_to_it_and_saves_nothing(
    owner, make_rubric, view, message
):
    rubric = make_rubric()

    response = signed_in(owner).post(
        reverse("rubric_criteria", args=[rubric.id]), save_post(rubric, **view)
    )

    assert response.status_code == 200
    assert message in response.content.decode()
    assert 'data-draft-state="unsaved">Unsaved edits<' in response.content.decode()
    assert versions(rubric) == [1]


def test_other_draft_edits_keep_the_chosen_view_unsaved(owner, make_rubric):
    rubric = make_rubric()

    response = signed_in(owner).post(
        reverse("rubric_criteria", args=[rubric.id]),
        draft_post(rubric, current_rows(rubric), "add", judge_view="trajectory"),
        headers={"HX-Request": "true"},
    )

    page = response.content.decode()
    assert 'name="judge_view" value="trajectory" checked' in page
    assert 'data-draft-state="unsaved">Unsaved edits<' in page and versions(rubric) == [1]


def test_a_viewer_reads_the_view_and_budget_without_a_form(viewer, make_rubric):
    rubric = make_rubric(judge_view="trajectory", run_token_budget=5000)

    page = signed_in(viewer).get(reverse("rubric_detail", args=[rubric.id])).content.decode()

    assert "Trajectory (every turn and tool call with its result)" in page
    assert "5,000 tokens" in page and 'name="judge_view"' not in page


def test_a_stranger_can_neither_see_nor_save_the_view(stranger, make_rubric):
    rubric = make_rubric()
    client = signed_in(stranger)

    page = client.get(reverse("rubric_detail", args=[rubric.id]))
    saved = client.post(
        reverse("rubric_criteria", args=[rubric.id]), save_post(rubric, judge_view="trajectory")
    )

    assert page.status_code == 404 and saved.status_code == 404
    assert versions(rubric) == [1]


def test_the_history_names_each_versions_view(owner, make_rubric):
    rubric = make_rubric()
    rubric_update(rubric=rubric, judge_view="trajectory")

    page = signed_in(owner).get(reverse("rubric_detail", args=[rubric.id])).content.decode()

    assert "3 criteria · trajectory view" in page and "3 criteria · final view" in page


# --- Try it -------------------------------------------------------------------------------------

TOOL_RUN_OUTPUT = [
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "lookup_order", "arguments": '{"order": "1234"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "order 1234: refund sent"},
    {"role": "assistant", "content": "Your refund for order number 1234 was sent, thanks."},
]


def judge_prompt(fake_judge) -> str:
    body = fake_judge.last_request()
    assert body is not None
    return "\n".join(str(m.get("content")) for m in body["messages"])


@pytest.mark.parametrize(("view", "sees_tool"), [("final", False), ("trajectory", True)])
def test_trying_the_draft_judges_in_the_drafts_view_not_the_saved_one(
    owner, make_rubric, make_run, fake_judge, view, sees_tool
):
    rubric = make_rubric(judge_view="conversation")
    run = make_run(output=TOOL_RUN_OUTPUT)

    response = signed_in(owner).post(
        reverse("rubric_try", args=[rubric.id]),
        draft_post(rubric, current_rows(rubric), "try", try_run=str(run.id), judge_view=view),
    )

    assert response.context["try_outcome"].error == ""
    prompt = judge_prompt(fake_judge)
    assert ("lookup_order" in prompt) is sees_tool
    assert "refund for order number 1234" in prompt
    assert versions(rubric) == [1]


def test_a_bad_budget_in_the_draft_stops_the_try_before_the_judge(
    owner, make_rubric, make_run, fake_judge
):
    rubric = make_rubric()
    run = make_run()

    response = signed_in(owner).post(
        reverse("rubric_try", args=[rubric.id]),
        draft_post(rubric, current_rows(rubric), "try", try_run=str(run.id), run_token_budget="12"),
    )

    assert response.context["try_outcome"] is None
    assert "must be between 1,000 and 1,000,000 tokens (got 12)" in response.context["try_error"]
    assert fake_judge.stats()["requests"] == 0


def test_a_budget_that_is_no_number_stops_the_try_too(owner, make_rubric, make_run, fake_judge):
    rubric = make_rubric()
    run = make_run()

    response = signed_in(owner).post(
        reverse("rubric_try", args=[rubric.id]),
        draft_post(
            rubric, current_rows(rubric), "try", try_run=str(run.id), run_token_budget="many"
        ),
    )

    assert "Fix what the judge sees" in response.context["try_error"]
    assert fake_judge.stats()["requests"] == 0
