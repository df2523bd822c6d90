"""Reviewing with the keyboard in Debian's Chromium: a / d / j / k / n on the review page."""

import pytest

from reviews.models import VerdictLabel, VerdictOverride
from runs.models import AgentRun
from tests.reviews.conftest import CRITERIA, judge_pending

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def queue(make_rubric, make_run, fake_judge):
    rubric = make_rubric(criteria=CRITERIA, alignment_mode="off")
    older = make_run(rubric=rubric.slug, external_id="older-run")
    newer = make_run(rubric=rubric.slug, external_id="newer-run")
    judge_pending()
    return rubric, newer, older


def test_a_reviewer_agrees_and_disagrees_with_the_keyboard(browser_page, sign_in, teammate, queue):
    rubric, newer, older = queue
    page = sign_in(browser_page, teammate)
    page.goto(f"/reviews/{rubric.id}/")
    assert page.get_by_test_id("progress").inner_text() == "0 of 2 reviewed"

    with page.expect_navigation():
        page.get_by_test_id("start-review").click()
    assert "newer-run" in page.locator("h1").inner_text()
    assert page.evaluate("document.activeElement.dataset.key") == "c1"

    with page.expect_navigation():
        page.keyboard.press("a")
    assert page.get_by_test_id("human-c1").inner_text() == "Reviewer: agrees"
    assert page.evaluate("document.activeElement.dataset.key") == "c2"

    page.keyboard.press("d")
    assert page.evaluate("document.activeElement.name") == "note"
    page.keyboard.type("It never gives the order number")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert "(overridden)" in page.get_by_test_id("human-c2").inner_text()
    assert "Failed" in page.get_by_test_id("effective").inner_text()

    page.keyboard.press("k")
    assert page.evaluate("document.activeElement.dataset.key") == "c2"
    page.keyboard.press("j")
    assert page.evaluate("document.activeElement.dataset.key") == "c3"
    with page.expect_navigation():
        page.keyboard.press("a")
    assert page.get_by_test_id("reviewed").is_visible()

    with page.expect_navigation():
        page.keyboard.press("n")
    assert "older-run" in page.locator("h1").inner_text()

    page.goto(f"/runs/{newer.id}/")
    assert "With reviews" in page.get_by_test_id("review-panel").inner_text()

    labels = {lb.criterion_key: lb.satisfied for lb in VerdictLabel.objects.filter(run=newer)}
    assert labels == {"c1": True, "c2": False, "c3": True}
    note = VerdictOverride.objects.get(run=newer, criterion_key="c2").note
    assert note == "It never gives the order number"
    assert AgentRun.objects.get(pk=newer.pk).passed is False


def test_escape_leaves_the_note_without_saving(browser_page, sign_in, teammate, queue):
    rubric, newer, _ = queue
    page = sign_in(browser_page, teammate)
    page.goto(f"/reviews/{rubric.id}/runs/{newer.id}/")

    page.keyboard.press("d")
    page.keyboard.type("half a thought")
    page.keyboard.press("Escape")
    page.keyboard.press("j")

    assert page.evaluate("document.activeElement.dataset.key") == "c2"
    assert not VerdictOverride.objects.exists()
