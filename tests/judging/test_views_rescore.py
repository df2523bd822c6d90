"""The re-score buttons (one run, selected runs, every failing run of a rubric), the cost
confirmation step, and the batch progress page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from runs.models import Evaluation, RescoreBatch, Status
from tests.page_helpers import judged_run, queries_for, signed_in

pytestmark = pytest.mark.django_db

PASSING = "Your refund for order number 1234 was sent today, thanks for waiting."
FAILING = "We will look into it."


@pytest.fixture
def rubric(make_rubric):
    return make_rubric()


def test_re_scoring_one_run_queues_an_evaluation_and_returns_to_the_run(
    owner, rubric, make_run, fake_judge
):
    run = judged_run(make_run, rubric=rubric.slug, output=PASSING)
    path = reverse("run_detail", args=[run.id])

    response = signed_in(owner).post(
        reverse("rescore_start"),
        {"scope": "run", "run": str(run.id), "rubric": str(rubric.id), "next": path},
    )

    assert response.status_code == 302 and response["Location"] == path
    batch = RescoreBatch.objects.get()
    assert batch.total == 1 and batch.created_by == owner
    assert Evaluation.objects.filter(run=run, batch=batch).count() == 1


def test_re_scoring_selected_runs_makes_one_batch_and_shows_its_progress(
    owner, rubric, make_run, fake_judge
):
    runs = [judged_run(make_run, rubric=rubric.slug, output=FAILING) for _ in range(3)]
    data = {"scope": "selected", "runs": [str(r.id) for r in runs[:2]]}

    response = signed_in(owner).post(reverse("rescore_start"), data)

    batch = RescoreBatch.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse(
        "batch_detail", args=[batch.id]
    )
    assert set(Evaluation.objects.filter(batch=batch).values_list("run_id", flat=True)) == {
        r.pk for r in runs[:2]
    }


def test_re_scoring_every_failing_run_of_a_rubric_skips_the_passing_ones(
    owner, rubric, make_run, fake_judge
):
    judged_run(make_run, rubric=rubric.slug, output=PASSING)
    failing = [judged_run(make_run, rubric=rubric.slug, output=FAILING) for _ in range(2)]

    signed_in(owner).post(reverse("rescore_start"), {"scope": "failing", "rubric": str(rubric.id)})

    batch = RescoreBatch.objects.get()
    assert set(Evaluation.objects.filter(batch=batch).values_list("run_id", flat=True)) == {
        r.pk for r in failing
    }


def test_a_costly_re_score_asks_for_confirmation_before_queueing(
    owner, team, make_rubric, make_run, fake_judge
):
    from rubrics.services import rubric_update

    rubric = make_rubric()
    judged_run(make_run, rubric=rubric.slug, output=FAILING)
    # A judge litellm has prices for, so the estimate has a cost (nothing is reusable from it);
    # of the deployment judge's provider, so it goes to the deployment's (fake) judge.
    rubric_update(rubric=rubric, judge_model="openai/gpt-4o-mini")
    team.confirm_cost_above = 0
    team.save()
    client = signed_in(owner)

    asked = client.post(reverse("rescore_start"), {"scope": "failing", "rubric": str(rubric.id)})
    assert asked.status_code == 200 and "Confirm this re-score" in asked.content.decode()
    assert not RescoreBatch.objects.exists()

    confirmed = client.post(
        reverse("rescore_start"), {"scope": "failing", "rubric": str(rubric.id), "confirm": "on"}
    )
    assert confirmed.status_code == 302 and RescoreBatch.objects.count() == 1


def test_the_buttons_ask_for_confirmation_only_above_the_teams_cost_threshold(
    owner, team, make_rubric, make_run, fake_judge
):
    from rubrics.services import rubric_update

    priced, unpriced = make_rubric(name="Priced"), make_rubric(name="Unpriced")
    judged_run(make_run, rubric=priced.slug, output=FAILING)
    judged_run(make_run, rubric=unpriced.slug, output=FAILING)
    # A judge litellm has prices for: its estimate has a cost. The fake judge has none.
    rubric_update(rubric=priced, judge_model="openai/gpt-4o-mini")
    client = signed_in(owner)

    def start(rubric) -> int:
        post = {"scope": "failing", "rubric": str(rubric.id)}
        return client.post(reverse("rescore_start"), post).status_code

    team.confirm_cost_above = 0
    team.save()
    assert start(priced) == 200 and not RescoreBatch.objects.exists()  # asked
    assert start(unpriced) == 302  # an unknown cost never asks
    assert RescoreBatch.objects.filter(rubric=unpriced).count() == 1
    team.confirm_cost_above = 5
    team.save()
    assert start(priced) == 302  # a cost below the threshold does not ask
    assert RescoreBatch.objects.filter(rubric=priced).count() == 1


def test_the_batch_page_polls_until_the_batch_ends(owner, rubric, make_run, fake_judge):
    from judging.services.execute import evaluation_execute
    from judging.services.rescore import batch_finish_if_done

    run = judged_run(make_run, rubric=rubric.slug, output=FAILING)
    client = signed_in(owner)
    client.post(reverse("rescore_start"), {"scope": "selected", "runs": [str(run.id)]})
    batch = RescoreBatch.objects.get()
    url = reverse("batch_detail", args=[batch.id])

    running = client.get(url).content.decode()
    for evaluation in Evaluation.objects.filter(batch=batch):
        Evaluation.objects.filter(pk=evaluation.pk).update(held=False)
        evaluation_execute(evaluation_id=str(evaluation.pk))
    batch_finish_if_done(batch_id=batch.pk)
    finished = client.get(
        url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="batch-progress"
    ).content.decode()

    assert 'hx-trigger="every 1s"' in running and "0 of 1 runs done" in running
    assert "hx-trigger" not in finished and "1 of 1 runs done" in finished
    assert finished.lstrip().startswith('<div id="batch-progress"')


def test_the_batch_list_runs_the_same_queries_for_one_or_five_batches(
    owner, rubric, make_run, fake_judge
):
    from judging.services.rescore import RescoreScope, batch_create

    run = judged_run(make_run, rubric=rubric.slug, output=FAILING)
    client = signed_in(owner)
    batch_create(team=rubric.team, rubric=rubric, scope=RescoreScope(runs=(run.pk,)))
    small = queries_for(client, reverse("batch_list"))
    for _ in range(4):
        Evaluation.objects.filter(status=Status.QUEUED).update(status=Status.CANCELLED)
        batch_create(team=rubric.team, rubric=rubric, scope=RescoreScope(runs=(run.pk,)))

    assert queries_for(client, reverse("batch_list")) == small


def test_a_viewer_cannot_re_score(viewer, rubric, make_run):
    run = make_run(rubric=rubric.slug)

    response = signed_in(viewer).post(
        reverse("rescore_start"), {"scope": "run", "run": str(run.id)}
    )

    assert response.status_code == 403 and not RescoreBatch.objects.exists()


def test_a_viewer_sees_no_re_score_buttons(viewer, rubric, make_run, fake_judge):
    run = judged_run(make_run, rubric=rubric.slug, output=FAILING)
    client = signed_in(viewer)

    pages = [
        client.get(reverse("run_detail", args=[run.id])),
        client.get(reverse("run_list"), {"rubric": str(rubric.id)}),
        client.get(reverse("rubric_detail", args=[rubric.id])),
    ]

    for page in pages:
        assert "Re-score" not in page.content.decode()


def test_re_scoring_another_teams_run_or_rubric_is_not_found(stranger, rubric, make_run):
    run = make_run(rubric=rubric.slug)
    client = signed_in(stranger)

    one = client.post(reverse("rescore_start"), {"scope": "run", "run": str(run.id)})
    failing = client.post(reverse("rescore_start"), {"scope": "failing", "rubric": str(rubric.id)})
    selected = client.post(reverse("rescore_start"), {"scope": "selected", "runs": [str(run.id)]})

    assert one.status_code == 404 and failing.status_code == 404
    assert selected.status_code == 302 and not RescoreBatch.objects.exists()


def test_another_teams_batch_is_not_found(stranger, owner, rubric, make_run, fake_judge):
    run = judged_run(make_run, rubric=rubric.slug, output=FAILING)
    signed_in(owner).post(reverse("rescore_start"), {"scope": "selected", "runs": [str(run.id)]})
    batch = RescoreBatch.objects.get()
    client = signed_in(stranger)

    assert client.get(reverse("batch_detail", args=[batch.id])).status_code == 404
    assert client.post(reverse("batch_cancel", args=[batch.id])).status_code == 404


def test_cancelling_a_batch_from_its_page_cancels_queued_work(owner, rubric, make_run, fake_judge):
    run = judged_run(make_run, rubric=rubric.slug, output=FAILING)
    client = signed_in(owner)
    client.post(reverse("rescore_start"), {"scope": "selected", "runs": [str(run.id)]})
    batch = RescoreBatch.objects.get()

    client.post(reverse("batch_cancel", args=[batch.id]))

    batch.refresh_from_db()
    assert batch.status == "cancelled"
    assert set(Evaluation.objects.filter(batch=batch).values_list("status", flat=True)) == {
        Status.CANCELLED
    }


def test_re_score_posts_need_a_csrf_token(owner, rubric, make_run):
    run = make_run(rubric=rubric.slug)
    response = signed_in(owner, enforce_csrf_checks=True).post(
        reverse("rescore_start"), {"scope": "run", "run": str(run.id)}
    )
    assert response.status_code == 403 and not RescoreBatch.objects.exists()


def test_an_off_site_next_is_ignored(owner, rubric, make_run, fake_judge):
    run = judged_run(make_run, rubric=rubric.slug, output=PASSING)

    response = signed_in(owner).post(
        reverse("rescore_start"),
        {"scope": "run", "run": str(run.id), "next": "https://evil.example/"},
    )

    assert response["Location"] == reverse("run_detail", args=[run.id])


def test_a_batch_whose_evaluations_are_partly_unpriced_shows_its_cost_as_a_lower_bound(
    owner, rubric, make_run, fake_judge, api
):
    runs = [judged_run(make_run, rubric=rubric.slug, output=FAILING) for _ in range(3)]
    client = signed_in(owner)
    client.post(reverse("rescore_start"), {"scope": "selected", "runs": [str(r.id) for r in runs]})
    batch = RescoreBatch.objects.get()
    priced, *unpriced = Evaluation.objects.filter(batch=batch).order_by("id")
    Evaluation.objects.filter(pk=priced.pk).update(
        status=Status.SUCCEEDED, cost=0.25, judge_calls=1
    )
    Evaluation.objects.filter(pk__in=[e.pk for e in unpriced]).update(
        status=Status.SUCCEEDED, cost=None, judge_calls=1
    )

    page = client.get(reverse("batch_detail", args=[batch.id])).content.decode()
    listing = client.get(reverse("batch_list")).content.decode()
    actual = api.get(f"/batches/{batch.id}").json()["actual"]

    assert "≥ $0.2500" in page and "2 of unknown cost" in page
    assert "≥ $0.2500" in listing and "2 of unknown cost" in listing
    assert (actual["cost"], actual["unpriced"]) == (0.25, 2)
