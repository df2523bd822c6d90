"""The editor's "try it" panel and the failed-criteria review (rates and the failing-run walk)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from rubrics.models import RubricVersion
from runs.models import Evaluation
from tests.page_helpers import XSS, judged_run, queries_for, signed_in
from tests.rubrics.test_views import current_rows, draft_post

pytestmark = pytest.mark.django_db

PASSING = "Your refund for order number 1234 was sent today, thanks for waiting."


# --- Try it ---------------------------------------------------------------------------------------


def test_trying_the_draft_scores_a_stored_run_without_saving_anything(
    owner, make_rubric, make_run, fake_judge
):
    rubric = make_rubric()
    run = make_run(output=PASSING)
    rows = current_rows(rubric) + [("", 'Says "goodbye"', True)]
    evaluations_before = Evaluation.objects.count()

    response = signed_in(owner).post(
        reverse("rubric_try", args=[rubric.id]),
        draft_post(rubric, rows, "try", try_run=str(run.id)),
    )

    outcome = response.context["try_outcome"]
    assert outcome.error == "" and outcome.result.passed is False
    assert [v.satisfied for v in outcome.result.verdicts] == [True, True, True, False]
    assert (
        "Try it" in response.content.decode()
        and "Says &quot;goodbye&quot;" in response.content.decode()
    )
    assert RubricVersion.objects.filter(rubric=rubric).count() == 1
    assert Evaluation.objects.count() == evaluations_before
    assert fake_judge.stats()["requests"] >= 1


def test_an_htmx_try_answers_with_the_verdicts_partial(owner, make_rubric, make_run, fake_judge):
    rubric = make_rubric()
    run = make_run(output=PASSING)

    response = signed_in(owner).post(
        reverse("rubric_try", args=[rubric.id]),
        draft_post(rubric, current_rows(rubric), "try", try_run=str(run.id)),
        HTTP_HX_REQUEST="true",
    )

    page = response.content.decode()
    assert page.lstrip().startswith('<div id="try-result"') and "<html" not in page
    assert page.count('<td class="verdict"') == 3 and '<span class="mark">✓</span> Passed' in page


def test_a_judge_failure_while_trying_is_shown_clearly(owner, make_rubric, make_run, fake_judge):
    rubric = make_rubric()
    run = make_run(output="[[judge:401]] denied")

    response = signed_in(owner).post(
        reverse("rubric_try", args=[rubric.id]),
        draft_post(rubric, current_rows(rubric), "try", try_run=str(run.id)),
    )

    assert response.context["try_outcome"].error
    assert "The judge failed." in response.content.decode()


def test_trying_on_another_teams_run_finds_no_run(owner, make_rubric, make_run, other_team):
    rubric = make_rubric()
    foreign = make_run(team=other_team)

    response = signed_in(owner).post(
        reverse("rubric_try", args=[rubric.id]),
        draft_post(rubric, current_rows(rubric), "try", try_run=str(foreign.id)),
    )

    assert response.context["try_outcome"] is None and "Pick a run" in response.content.decode()


# --- Failed criteria -----------------------------------------------------------------------------


@pytest.fixture
def reviewed(make_rubric, make_run, fake_judge):
    """Support rubric, four judged runs: c1 fails on two, c2 on three, c3 (optional) on all."""
    rubric = make_rubric()
    outputs = [
        "Your refund for order number 1 was sent.",  # c3 fails
        "We sent it, order number 2.",  # c1, c3 fail
        "Refund sent.",  # c2, c3 fail
        "Nothing yet.",  # c1, c2, c3 fail
    ]
    runs = [
        judged_run(make_run, rubric=rubric.slug, output=o, external_id=f"run-{i}")
        for i, o in enumerate(outputs)
    ]
    return rubric, runs


def test_failure_rates_list_the_most_failed_criterion_first(owner, reviewed):
    rubric, _ = reviewed

    response = signed_in(owner).get(reverse("failures"), {"rubric": str(rubric.id)})

    rows = [(r.criterion.key, r.failed, r.judged) for r in response.context["rows"]]
    assert rows == [("c3", 4, 4), ("c1", 2, 4), ("c2", 2, 4)]
    assert "100.0%" in response.content.decode() and "50.0%" in response.content.decode()


def test_an_htmx_request_for_the_failure_table_answers_with_the_table_partial(owner, reviewed):
    rubric, _ = reviewed

    response = signed_in(owner).get(
        reverse("failures"),
        {"rubric": str(rubric.id), "version": 1, "partial": "table"},
        HTTP_HX_REQUEST="true",
    )

    assert response.status_code == 200
    page = response.content.decode()
    assert page.lstrip().startswith('<div class="card" id="failure-table">')
    assert "<html" not in page and "Failed criteria</h1>" not in page
    assert page.count('<a class="btn btn-sm"') == 3 and "100.0%" in page and "50.0%" in page


def test_an_htmx_request_for_the_failure_table_without_a_rubric_answers_the_empty_card(owner):
    response = signed_in(owner).get(
        reverse("failures"), {"partial": "table"}, HTTP_HX_REQUEST="true"
    )

    assert response.status_code == 200
    page = response.content.decode()
    assert "<html" not in page and "No rubric with criteria yet" in page


def test_the_failures_page_runs_the_same_queries_for_few_or_many_runs(owner, reviewed, make_run):
    rubric, _ = reviewed
    client = signed_in(owner)
    small = queries_for(client, reverse("failures") + f"?rubric={rubric.id}")
    for i in range(6):
        judged_run(make_run, rubric=rubric.slug, output=f"Nope {i}")

    assert queries_for(client, reverse("failures") + f"?rubric={rubric.id}") == small


def test_walking_failing_runs_goes_newest_to_oldest_with_neighbours(owner, reviewed):
    rubric, runs = reviewed
    client = signed_in(owner)
    url = reverse("failures_walk", args=[rubric.id, "c1"])

    first = client.get(url, {"version": 1}).context["step"]
    second = client.get(url, {"version": 1, "run": str(first.older_run_id)}).context["step"]

    assert first.verdict.run_id == runs[3].pk and first.position == 1 and first.total == 2
    assert first.newer_run_id is None and first.older_run_id == runs[1].pk
    assert second.verdict.run_id == runs[1].pk and second.newer_run_id == runs[3].pk
    assert second.older_run_id is None and second.position == 2


def test_the_walk_page_has_keyboard_links_and_the_judges_reasoning(owner, reviewed):
    rubric, runs = reviewed

    page = (
        signed_in(owner)
        .get(reverse("failures_walk", args=[rubric.id, "c1"]), {"version": 1})
        .content.decode()
    )

    assert 'data-hotkey="j"' in page and "1 of 2" in page and "Why it failed" in page


def test_a_run_that_does_not_fail_the_criterion_is_not_found_in_the_walk(owner, reviewed):
    rubric, runs = reviewed
    response = signed_in(owner).get(
        reverse("failures_walk", args=[rubric.id, "c1"]), {"version": 1, "run": str(runs[0].id)}
    )
    assert response.status_code == 404


def test_another_teams_failures_are_not_found(stranger, reviewed):
    rubric, _ = reviewed
    client = signed_in(stranger)

    assert client.get(reverse("failures"), {"rubric": str(rubric.id)}).status_code == 404
    assert client.get(reverse("failures_walk", args=[rubric.id, "c1"])).status_code == 404


def test_a_criterion_with_a_script_tag_shows_as_text_in_the_review(
    owner, make_rubric, make_run, fake_judge
):
    rubric = make_rubric(criteria=[{"description": f'Says "zebra" {XSS}', "required": True}])
    judged_run(make_run, rubric=rubric.slug, output=f"no {XSS}")
    client = signed_in(owner)

    rates = client.get(reverse("failures"), {"rubric": str(rubric.id)}).content.decode()
    walk = client.get(
        reverse("failures_walk", args=[rubric.id, "c1"]), {"version": 1}
    ).content.decode()

    for page in (rates, walk):
        assert XSS not in page and "&lt;script&gt;" in page
