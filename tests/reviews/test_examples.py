"""Teach the judge from a review: a reviewed verdict becomes a graded example of its criterion
(in the rubric's draft), and agreement leaves a criterion's example runs out of its figures."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from reviews.selectors import rubric_agreement
from reviews.services import override_create, review_confirm
from rubrics.models import CriterionExample
from rubrics.services import rubric_set_criteria

from .conftest import CRITERIA, FAILING, judge_pending

pytestmark = pytest.mark.django_db


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def example_url(rubric, run) -> str:
    return reverse("reviews:example", args=[rubric.id, run.id])


def draft(rubric) -> list[tuple]:
    rows = CriterionExample.objects.filter(rubric=rubric, version__isnull=True)
    return [(e.criterion_key, e.excerpt, e.satisfied, e.reason, e.run_id) for e in rows]


def test_a_reviewed_verdict_is_added_to_the_draft_with_the_reviewers_verdict(
    teammate, judged_run, rubric, reviewer
):
    run = judged_run(output=FAILING)  # the judge says c2 is not satisfied
    override_create(run=run, criterion_key="c2", satisfied=True, note="it is", reviewer=reviewer)
    client = client_for(teammate)
    page = client.get(reverse("reviews:review", args=[rubric.id, run.id])).content.decode()
    # Only labelled criteria offer it; the excerpt is prefilled from the output.
    assert 'data-testid="add-example-c2"' in page and 'data-testid="add-example-c1"' not in page
    assert FAILING in page

    response = client.post(
        example_url(rubric, run),
        {"criterion": "c2", "excerpt": "Your refund was sent today.", "reason": "order named"},
    )
    assert response.status_code == 302
    assert draft(rubric) == [("c2", "Your refund was sent today.", True, "order named", run.pk)]
    # Not published yet: the current version has no examples until a version is saved.
    assert not CriterionExample.objects.filter(version=rubric.current_version).exists()


def test_an_unlabelled_criterion_or_bad_text_is_a_422_naming_the_field(
    teammate, judged_run, rubric, reviewer
):
    run = judged_run()
    client = client_for(teammate)
    unlabelled = client.post(
        example_url(rubric, run), {"criterion": "c1", "excerpt": "x", "reason": "y"}
    )
    assert unlabelled.status_code == 422
    assert "review this criterion first" in unlabelled.content.decode()

    review_confirm(run=run, criterion_key="c1", reviewer=reviewer)
    long = client.post(
        example_url(rubric, run),
        {"criterion": "c1", "excerpt": "<b>" + "x" * 2000, "reason": "ok"},
    )
    assert long.status_code == 422
    body = long.content.decode()
    assert "Excerpt: at most 2,000 characters (got 2,003)" in body
    assert "&lt;b&gt;xxx" in body and "<b>xxx" not in body  # the posted text comes back escaped
    blank = client.post(
        example_url(rubric, run), {"criterion": "c1", "excerpt": "x", "reason": " "}
    )
    assert blank.status_code == 422 and "Reason: must not be blank" in blank.content.decode()
    assert draft(rubric) == []


def test_the_same_run_twice_for_a_criterion_is_refused(teammate, judged_run, rubric, reviewer):
    run = judged_run()
    review_confirm(run=run, criterion_key="c1", reviewer=reviewer)
    client = client_for(teammate)
    data = {"criterion": "c1", "excerpt": "x", "reason": "y"}
    assert client.post(example_url(rubric, run), data).status_code == 302
    again = client.post(example_url(rubric, run), data)
    assert again.status_code == 422 and "already an example" in again.content.decode()


def test_strangers_get_a_404_and_viewers_a_403(stranger, viewer, judged_run, rubric, reviewer):
    run = judged_run()
    review_confirm(run=run, criterion_key="c1", reviewer=reviewer)
    data = {"criterion": "c1", "excerpt": "x", "reason": "y"}
    assert client_for(stranger).post(example_url(rubric, run), data).status_code == 404
    assert client_for(viewer).post(example_url(rubric, run), data).status_code == 403
    assert draft(rubric) == []


def test_agreement_leaves_a_criterions_example_runs_out_and_says_how_many(
    api, teammate, judged_run, rubric, reviewer
):
    taught, other = judged_run(), judged_run(output=FAILING)
    for run in (taught, other):
        for key in ("c1", "c2"):
            review_confirm(run=run, criterion_key=key, reviewer=reviewer)
    client_for(teammate).post(
        example_url(rubric, taught), {"criterion": "c1", "excerpt": "x", "reason": "y"}
    )
    rubric_set_criteria(rubric=rubric, criteria=CRITERIA)  # publishes the example: v2
    for run in (taught, other):
        assert api.post(f"/runs/{run.id}/rescore", {}).status_code == 202
    judge_pending()
    rubric.refresh_from_db()

    report = rubric_agreement(rubric=rubric, version=rubric.current_version)
    labelled = {c.criterion_id: c.stats.labelled for c in report.criteria}
    assert labelled == {"c1": 1, "c2": 2, "c3": 0}  # the example run counts for c2, not c1
    assert report.excluded_examples == 1

    page = client_for(teammate).get(reverse("reviews:agreement", args=[rubric.id]))
    assert "1 run used as examples excluded" in page.content.decode()
    answer = api.get(f"/rubrics/{rubric.slug}/agreement").json()
    assert answer["excluded_examples"] == 1
    # Version 1 showed no examples: nothing is left out of its figures.
    old = rubric_agreement(rubric=rubric, version=rubric.versions.get(number=1))
    assert old.excluded_examples == 0
