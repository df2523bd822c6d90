"""Teach the judge in Debian's Chromium: from a review, add a verdict as an example, see it in
the rubric editor, edit it there and publish it with a new version."""

import pytest

from reviews.services import Reviewer, override_create
from rubrics.models import CriterionExample
from tests.reviews.conftest import CRITERIA, FAILING, judge_pending

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_reviewer_adds_an_example_from_a_review_and_publishes_it_from_the_editor(
    browser_page, sign_in, teammate, make_rubric, make_run, fake_judge
):
    rubric = make_rubric(criteria=CRITERIA, alignment_mode="off")
    run = make_run(rubric=rubric.slug, external_id="taught-run", output=FAILING)
    judge_pending()
    override_create(
        run=run,
        criterion_key="c2",
        satisfied=True,
        note="close enough",
        reviewer=Reviewer(user=teammate),
    )
    page = sign_in(browser_page, teammate)
    page.goto(f"/reviews/{rubric.id}/runs/{run.id}/")

    page.get_by_test_id("add-example-c2").locator("summary").click()
    excerpt = page.locator("#excerpt-c2")
    assert excerpt.input_value() == FAILING  # prefilled from the run's output
    excerpt.fill("Your refund was sent <today>.")
    assert page.locator("#reason-c2").input_value() == "close enough"  # the reviewer's note
    with page.expect_navigation():
        page.get_by_test_id("add-example-submit-c2").click()
    assert "Added as an example of c2" in page.content()

    page.goto(f"/rubrics/{rubric.id}/")
    assert page.get_by_test_id("examples-pending").is_visible()
    first = page.get_by_test_id("example-1")
    assert "c2" in first.inner_text()
    assert first.locator("textarea").input_value() == "Your refund was sent <today>."

    first.locator("input[name=reason]").fill("the order is implied")
    with page.expect_navigation():
        first.get_by_role("button", name="Save example").click()
    assert page.get_by_test_id("example-1").locator("input[name=reason]").input_value() == (
        "the order is implied"
    )

    with page.expect_navigation():
        page.get_by_role("button", name="Save as version 2").click()
    assert "Saved as version 2" in page.content()
    assert not page.get_by_test_id("examples-pending").count()
    published = CriterionExample.objects.get(version__number=2, version__rubric=rubric)
    assert (published.criterion_key, published.satisfied, published.run_id) == ("c2", True, run.pk)
    assert published.reason == "the order is implied"
