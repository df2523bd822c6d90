"""/api/rubrics/{rubric}/suggestions: asking the judge for an edit of a criterion reviewers keep
disagreeing with, the job judged in-process by the fake judge over HTTP (its answer drops the
criterion's double quotes), accepting it into a draft and a comparison, dismissing it."""

from __future__ import annotations

from typing import Any

import pytest

from reviews.models import Comparison, Suggestion
from reviews.services import override_create
from reviews.services.suggestions import suggestion_generate
from rubrics.models import RubricVersion
from tests.api_client import assert_error, field_locs

from .conftest import FAILING, judge_pending

NOTE = "The order number is already in the task: the answer need not repeat it."


@pytest.fixture
def disagreed(judged_run, reviewer) -> list[Any]:
    """Three runs failing c2 by the judge, each overridden to satisfied by a reviewer."""
    runs = [judged_run(output=f"{FAILING} (#{i})") for i in range(3)]
    for run in runs:
        override_create(run=run, criterion_key="c2", satisfied=True, note=NOTE, reviewer=reviewer)
    return runs


def _url(rubric, tail: str = "") -> str:
    return f"/rubrics/{rubric.slug}/suggestions{tail}"


def _ready(api, rubric) -> dict[str, Any]:
    """Ask for c2's edit and run the job in this process (as the worker's task does)."""
    asked = api.post(_url(rubric), {"criterion_id": "c2"})
    assert asked.status_code == 202, asked.content
    item = asked.json()["items"][0]
    assert suggestion_generate(suggestion_id=item["id"]) == "ready"
    return next(s for s in api.get(_url(rubric)).json()["items"] if s["id"] == item["id"])


def test_asking_answers_202_with_a_pending_suggestion_resting_on_the_disagreeing_runs(
    api, rubric, disagreed
):
    response = api.post(_url(rubric), {})
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["min_labels"] == 3
    [item] = body["items"]
    assert (item["criterion_id"], item["status"], item["kind"]) == ("c2", "pending", "")
    assert sorted(item["evidence"]) == sorted(str(r.pk) for r in disagreed)
    assert item["criterion"] == 'Gives the "order number"' and item["version"] == 1
    listed = api.get(_url(rubric)).json()["items"]
    assert [s["id"] for s in listed] == [item["id"]]
    # Asking again while it is pending answers the same suggestion, not a second judge call.
    again = api.post(_url(rubric), {"criterion_id": "c2"}).json()["items"]
    assert [s["id"] for s in again] == [item["id"]]


def test_the_job_asks_the_judge_with_the_excerpts_reasoning_and_notes_and_stores_the_edit(
    api, rubric, disagreed, fake_judge
):
    item = _ready(api, rubric)
    assert (item["status"], item["kind"]) == ("ready", "reword")
    assert item["text"] == "Gives the order number"
    assert all(str(r.pk) in item["rationale"] for r in disagreed)
    assert item["tokens"] > 0 and item["judge_model"] == "openai/fake-judge"
    sent = fake_judge.last_request()
    prompt = sent["messages"][1]["content"]
    assert NOTE in prompt and FAILING in prompt
    assert 'output never mentions \\"order number\\"' in prompt  # the judge's reasoning
    assert sent["response_format"]["json_schema"]["name"] == "criterion_edit"
    assert fake_judge.suggestions() == 1


def test_too_few_disagreeing_labels_is_a_422_naming_criterion_id(api, rubric, judged_run, reviewer):
    for i in range(2):
        run = judged_run(output=f"{FAILING} (#{i})")
        override_create(run=run, criterion_key="c2", satisfied=True, note=NOTE, reviewer=reviewer)
    named = api.post(_url(rubric), {"criterion_id": "c2"})
    assert ["body", "payload", "criterion_id"] in field_locs(named)
    assert "c2 has 2 labels" in named.json()["detail"][0]["msg"]
    anyone = api.post(_url(rubric), {})
    assert "c1: 0, c2: 2, c3: 0" in anyone.json()["detail"][0]["msg"]
    unknown = api.post(_url(rubric), {"criterion_id": "c9"})
    assert ["body", "payload", "criterion_id"] in field_locs(unknown)
    # The rubric's own threshold: two labels are enough now.
    assert api.put(_url(rubric, "/threshold"), {"min_labels": 2}).json() == {"min_labels": 2}
    assert api.post(_url(rubric), {"criterion_id": "c2"}).status_code == 202
    assert api.put(_url(rubric, "/threshold"), {"min_labels": 0}).status_code == 422


def test_accepting_makes_a_draft_version_and_a_comparison_on_the_labelled_runs(
    api, rubric, disagreed
):
    item = _ready(api, rubric)
    response = api.post(_url(rubric, f"/{item['id']}/accept"))
    assert response.status_code == 200, response.content
    body = response.json()
    draft = RubricVersion.objects.get(rubric=rubric, number=body["draft_version"])
    assert draft.published is False
    assert [c.description for c in draft.criteria.order_by("position")] == [
        'Mentions "refund"',
        "Gives the order number",
        'Says "thanks"',
    ]
    assert list(draft.criteria.order_by("position").values_list("key", flat=True)) == [
        "c1",
        "c2",
        "c3",
    ]
    rubric.refresh_from_db()
    assert rubric.current_version.number == 1  # never applied to the current version
    comparison = Comparison.objects.get(pk=body["comparison_id"])
    assert (comparison.version_a.number, comparison.version_b_id) == (1, draft.pk)
    assert comparison.sample == {"kind": "labelled"} and comparison.runs == 3
    assert body["comparison_url"] == f"/reviews/comparisons/{comparison.pk}/"
    assert body["suggestion"]["status"] == "accepted"
    # The reviewer sees agreement before and after: the draft agrees with every label.
    judge_pending()
    report = api.get(f"/comparisons/{comparison.pk}").json()
    c2 = next(c for c in report["criteria"] if c["criterion_id"] == "c2")
    assert (c2["human_a"]["agreement"], c2["human_b"]["agreement"]) == (0.0, 1.0)
    # Accepting again answers the same draft and comparison.
    again = api.post(_url(rubric, f"/{item['id']}/accept")).json()
    assert (again["draft_version"], again["comparison_id"]) == (draft.number, str(comparison.pk))


def test_a_split_replaces_the_criterion_with_two_and_an_instruction_is_appended(
    api, make_rubric, make_run, reviewer, fake_judge
):
    rubric = make_rubric(
        name="Split me",
        criteria=[
            {"description": "Is polite and brief [[suggest:split]]", "required": True},
            {"description": "Is kind [[suggest:instruction]]", "required": False},
        ],
        alignment_mode="off",
    )
    for i in range(3):
        run = make_run(rubric=rubric.slug, output=f"Sure. [[unsatisfied]] ({i})")
        judge_pending()
        run.refresh_from_db()
        for key in ("c1", "c2"):
            override_create(
                run=run, criterion_key=key, satisfied=True, note=NOTE, reviewer=reviewer
            )
    split = _ready_for(api, rubric, "c1")
    assert (split["kind"], split["text"]) == ("split", "Is polite\nbrief")
    body = api.post(_url(rubric, f"/{split['id']}/accept")).json()
    draft = RubricVersion.objects.get(rubric=rubric, number=body["draft_version"])
    rows = list(draft.criteria.order_by("position").values_list("key", "description", "required"))
    assert rows[0] == ("c1", "Is polite", True) and rows[1][1:] == ("brief", True)
    assert rows[1][0] not in ("c1", "c2") and rows[2][:2] == (
        "c2",
        "Is kind [[suggest:instruction]]",
    )

    instruction = _ready_for(api, rubric, "c2")
    assert instruction["kind"] == "instruction" and NOTE in instruction["text"]
    body = api.post(_url(rubric, f"/{instruction['id']}/accept")).json()
    draft = RubricVersion.objects.get(rubric=rubric, number=body["draft_version"])
    assert draft.instructions == instruction["text"]
    assert draft.criteria.count() == 2


def _ready_for(api, rubric, key: str) -> dict[str, Any]:
    asked = api.post(_url(rubric), {"criterion_id": key}).json()["items"][0]
    assert suggestion_generate(suggestion_id=asked["id"]) == "ready"
    return next(s for s in api.get(_url(rubric)).json()["items"] if s["id"] == asked["id"])


def test_dismissing_sets_it_aside_and_a_dismissed_one_cannot_be_accepted(api, rubric, disagreed):
    item = _ready(api, rubric)
    dismissed = api.post(_url(rubric, f"/{item['id']}/dismiss"))
    assert dismissed.status_code == 200 and dismissed.json()["status"] == "dismissed"
    assert_error(api.post(_url(rubric, f"/{item['id']}/accept")), 409)
    assert RubricVersion.objects.filter(rubric=rubric).count() == 1
    assert api.get(_url(rubric), status="dismissed").json()["items"][0]["id"] == item["id"]
    assert api.get(_url(rubric), status="ready").json()["items"] == []


def test_a_pending_suggestion_can_be_neither_accepted_nor_dismissed(api, rubric, disagreed):
    item = api.post(_url(rubric), {}).json()["items"][0]
    assert (
        "pending" in assert_error(api.post(_url(rubric, f"/{item['id']}/accept")), 409)["message"]
    )
    assert_error(api.post(_url(rubric, f"/{item['id']}/dismiss")), 409)


def test_another_teams_rubric_and_suggestions_are_404(api, other_api, rubric, disagreed):
    item = _ready(api, rubric)
    assert_error(other_api.get(_url(rubric)), 404)
    assert_error(other_api.post(_url(rubric), {}), 404)
    assert_error(other_api.post(_url(rubric, f"/{item['id']}/accept")), 404)
    assert_error(other_api.post(_url(rubric, f"/{item['id']}/dismiss")), 404)
    assert Suggestion.objects.get(pk=item["id"]).status == "ready"


def test_a_viewer_reads_suggestions_but_cannot_ask_accept_or_dismiss(
    api, session_api, viewer, rubric, disagreed
):
    item = _ready(api, rubric)
    as_viewer = session_api(viewer)
    assert as_viewer.get(_url(rubric)).status_code == 200
    assert_error(as_viewer.post(_url(rubric), {}), 403)
    assert_error(as_viewer.post(_url(rubric, f"/{item['id']}/accept")), 403)
    assert_error(as_viewer.post(_url(rubric, f"/{item['id']}/dismiss")), 403)
    assert_error(as_viewer.put(_url(rubric, "/threshold"), {"min_labels": 1}), 403)
