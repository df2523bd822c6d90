import pytest
from reviews.services import override_create, review_confirm, Reviewer
from .conftest import CRITERIA, FAILING, judge_pending
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

def test_shots(browser_page, sign_in, teammate, make_rubric, make_run, fake_judge):
    rubric = make_rubric(criteria=CRITERIA, alignment_mode="user")
    runs = [make_run(rubric=rubric.slug, external_id=f"run-{i}", output=FAILING if i % 2 else None) if i % 2 else make_run(rubric=rubric.slug, external_id=f"run-{i}") for i in range(5)]
    judge_pending()
    r = Reviewer(user=teammate)
    review_confirm(run=runs[0], criterion_key="c1", reviewer=r)
    override_create(run=runs[1], criterion_key="c2", satisfied=True, note="It names order 1234 <b>x</b>", reviewer=r)
    override_create(run=runs[2], criterion_key="c1", satisfied=False, note="not a refund", reviewer=r)
    page = sign_in(browser_page, teammate)
    page.goto(f"/reviews/{rubric.id}/"); page.screenshot(path="/tmp/shot_queue.png", full_page=True)
    page.goto(f"/reviews/{rubric.id}/runs/{runs[1].id}/"); page.screenshot(path="/tmp/shot_review.png", full_page=True)
    page.keyboard.press("d"); page.screenshot(path="/tmp/shot_review_d.png")
    page.goto(f"/reviews/{rubric.id}/agreement/"); page.screenshot(path="/tmp/shot_agreement.png", full_page=True)
    page.goto(f"/runs/{runs[1].id}/"); page.wait_for_timeout(500); page.screenshot(path="/tmp/shot_run.png", full_page=True)
