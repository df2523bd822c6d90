"""POST /api/rubrics/draft-from-prompt: criteria drafted by the judge from an agent's system
prompt (the fake judge over HTTP makes one criterion per sentence that demands or recommends,
required only for the demands), never saved as a rubric; its tokens count against the budget."""

from __future__ import annotations

import pytest
from django.utils import timezone

from judging.services.budget import budget_update
from judging.services.budget_slices import period_starts
from reviews.models import CriteriaDraft
from rubrics.models import Rubric
from runs.models.budget import BudgetCounter
from tests.api_client import assert_error, field_locs

URL = "/rubrics/draft-from-prompt"
PROMPT = (
    "You are the support agent of Acme. You must ask for the order number before looking up "
    "an order. Never promise a refund date. You should thank the customer. Our office is in "
    "Lyon."
)


def test_the_draft_has_one_checkable_criterion_per_demand_required_only_where_demanded(
    api, fake_judge
):
    response = api.post(URL, {"system_prompt": PROMPT})

    assert response.status_code == 200, response.content
    criteria = response.json()["criteria"]
    assert [(c["description"], c["required"]) for c in criteria] == [
        ("You must ask for the order number before looking up an order", True),
        ("Never promise a refund date", True),
        ("You should thank the customer", False),
    ]
    assert all(c["rationale"].startswith("The system prompt says") for c in criteria)
    # Nothing is saved as a rubric; the request is recorded with its usage.
    assert not Rubric.objects.exists()
    [draft] = CriteriaDraft.objects.all()
    assert (draft.status, draft.criteria_count, draft.runs_shown) == ("ready", 3, 0)
    assert draft.prompt_tokens > 0 and draft.finished_at is not None


def test_the_prompt_the_judge_is_sent_holds_the_system_prompt_in_a_bounded_block(
    api, make_run, fake_judge
):
    run = make_run(output="Thanks! What is your order number?")

    assert api.post(URL, {"system_prompt": PROMPT, "runs": [str(run.pk)]}).status_code == 200

    sent = fake_judge.last_request()
    system, user = (m["content"] for m in sent["messages"])
    assert "Draft the rubric's criteria" in system and "Boundary of this request" in system
    assert PROMPT in user and "What is your order number?" in user
    assert sent["response_format"]["json_schema"]["name"] == "criteria_draft"
    assert CriteriaDraft.objects.get().runs_shown == 1


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({}, ["body", "payload", "system_prompt"]),
        ({"system_prompt": "   "}, ["body", "payload", "system_prompt"]),
        ({"system_prompt": "x" * 20_001}, ["body", "payload", "system_prompt"]),
        ({"system_prompt": PROMPT, "runs": ["r"] * 6}, ["body", "payload", "runs"]),
        ({"system_prompt": PROMPT, "runs": ["not-a-run"]}, ["body", "payload", "runs", 0]),
        ({"system_prompt": PROMPT, "model": "x"}, ["body", "payload", "model"]),
    ],
)
def test_bad_input_is_a_422_naming_the_field_and_asks_no_judge(api, fake_judge, body, loc):
    assert loc in field_locs(api.post(URL, body))
    assert fake_judge.drafts() == 0
    assert not CriteriaDraft.objects.exists()


def test_another_teams_run_is_a_422_naming_runs(api, make_run, other_team, fake_judge):
    theirs = make_run(team=other_team)

    assert ["body", "payload", "runs"] in field_locs(
        api.post(URL, {"system_prompt": PROMPT, "runs": [str(theirs.pk)]})
    )
    assert fake_judge.drafts() == 0


def test_a_viewer_may_not_draft_and_no_key_is_a_401(session_api, viewer, anon, fake_judge):
    assert_error(session_api(viewer).post(URL, {"system_prompt": PROMPT}), 403)
    assert_error(anon.post(URL, {"system_prompt": PROMPT}), 401)
    assert fake_judge.drafts() == 0


@pytest.mark.parametrize("fault", ["malformed", "wrong_type", "duplicate"])
def test_an_answer_that_stays_unusable_is_a_502_saying_why_and_recorded_failed(
    api, fake_judge, fault
):
    body = assert_error(api.post(URL, {"system_prompt": f"{PROMPT} [[judge:{fault}]]"}), 502)

    assert body["message"].startswith("the judge's answer was not usable criteria")
    assert fake_judge.drafts() == 2  # the answer, then the repair re-ask
    draft = CriteriaDraft.objects.get()
    assert draft.status == "failed" and draft.error == body["message"]
    assert draft.prompt_tokens > 0  # the calls it took still count


def test_a_judge_that_keeps_failing_is_a_503_without_its_address(api, fake_judge, settings):
    body = assert_error(api.post(URL, {"system_prompt": f"{PROMPT} [[judge:500]]"}), 503)

    assert body["message"].startswith("the judge could not be reached")
    assert "127.0.0.1" not in body["message"]
    assert CriteriaDraft.objects.get().status == "failed"


def _today(team) -> BudgetCounter:
    return BudgetCounter.objects.get(
        team=team, period="day", starts_on=period_starts(timezone.now())["day"]
    )


def test_a_drafts_tokens_count_against_the_budget_and_survive_a_recount(api, team, fake_judge):
    budget_update(team=team, daily_tokens=10_000_000)

    assert api.post(URL, {"system_prompt": PROMPT}).status_code == 200

    draft = CriteriaDraft.objects.get()
    used = draft.prompt_tokens + draft.completion_tokens
    assert used > 0 and _today(team).tokens == used
    budget_update(team=team, daily_tokens=10_000_000)  # recounted from the records
    assert _today(team).tokens == used


def test_a_reached_budget_is_a_409_and_asks_no_judge(api, team, fake_judge):
    budget_update(team=team, daily_tokens=1)
    assert api.post(URL, {"system_prompt": PROMPT}).status_code == 200  # the first fits
    body = assert_error(api.post(URL, {"system_prompt": PROMPT}), 409)

    assert "judge budget is reached" in body["message"]
    assert fake_judge.drafts() == 1


def test_more_drafts_in_flight_than_allowed_is_a_429_with_retry_after(
    api, team, fake_judge, settings
):
    settings.EVALSITE_DRAFT_MAX_IN_FLIGHT = 2
    for _ in range(2):  # two requests of this team still waiting on the judge
        CriteriaDraft.objects.create(team=team)

    response = api.post(URL, {"system_prompt": PROMPT})

    assert_error(response, 429)
    assert response["Retry-After"] == "5"
    assert fake_judge.drafts() == 0
    # A pending row older than the judge call's time limit belonged to a dead process.
    CriteriaDraft.objects.update(created_at=timezone.now() - timezone.timedelta(hours=1))
    assert api.post(URL, {"system_prompt": PROMPT}).status_code == 200


def test_no_rubric_can_take_the_routes_word_as_its_slug(api, fake_judge):
    refused = api.post("/rubrics", {"name": "X", "slug": "draft-from-prompt", "criteria": "- A"})
    assert ["body", "payload", "slug"] in field_locs(refused)

    made = api.post("/rubrics", {"name": "Draft from prompt", "criteria": "- A"})
    assert made.status_code == 201, made.content
    assert made.json()["slug"] == "draft-from-prompt-2"
    assert api.get("/rubrics/draft-from-prompt-2").status_code == 200
