"""Compare a draft with the current version in Debian's Chromium and open a flipped run from
the comparison page."""

import re

import pytest
from playwright.sync_api import expect

from reviews.models import Comparison
from tests.reviews.conftest import CRITERIA, FAILING, PASSING, judge_pending

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_compare_the_draft_with_current_and_open_a_flipped_run(
    browser_page, sign_in, teammate, make_rubric, make_run, fake_judge
):
    rubric = make_rubric(criteria=CRITERIA, alignment_mode="off")
    make_run(rubric=rubric.slug, external_id="kept-run", output=PASSING)
    flipped = make_run(rubric=rubric.slug, external_id="flipped-run", output=FAILING)
    judge_pending()
    page = sign_in(browser_page, teammate)
    page.goto(f"/rubrics/{rubric.id}/")

    page.locator('textarea[name="c-1-description"]').fill('Mentions "sent"')
    page.locator("#compare-n").fill("10")
    with page.expect_navigation(url=re.compile(r"/reviews/comparisons/")):
        page.get_by_test_id("compare-draft").click()
    comparison = Comparison.objects.get()
    assert comparison.runs == 2 and not comparison.version_b.published

    judge_pending()  # no worker here: the test judges what the comparison queued
    page.reload()
    table = page.get_by_test_id("criteria-flips")
    c2 = table.locator("tr", has_text='Mentions "sent"')
    assert "reworded" in c2.inner_text()
    c2.locator("summary").click()  # fail → pass (nothing passes → fails): which runs
    with page.expect_navigation(url=re.compile(str(flipped.id))):
        c2.get_by_test_id("flip-link").click()
    assert "flipped-run" in page.content()


def test_saving_compared_edits_saves_the_number_the_button_shows_and_leaves_no_stray_version(
    browser_page, sign_in, teammate, make_rubric, make_run, fake_judge
):
    rubric = make_rubric(criteria=CRITERIA, alignment_mode="off")
    make_run(rubric=rubric.slug, external_id="a-run", output=PASSING)
    judge_pending()
    page = sign_in(browser_page, teammate)
    page.goto(f"/rubrics/{rubric.id}/")
    page.locator('textarea[name="c-1-description"]').fill('Mentions "sent"')
    expect(page.locator("[data-draft-state]")).to_contain_text("Unsaved edits saved")
    page.locator("#compare-n").fill("10")
    with page.expect_navigation(url=re.compile(r"/reviews/comparisons/")):
        page.get_by_test_id("compare-draft").click()

    page.goto(f"/rubrics/{rubric.id}/")
    save = page.get_by_test_id("save-version")
    expect(save).to_have_text("Save as version 2")
    page.locator('textarea[name="c-1-description"]').fill('Mentions "sent" today')
    expect(save).to_have_text("Save as version 3")  # not the compared edits any more
    page.locator('textarea[name="c-1-description"]').fill('Mentions "sent"')
    expect(save).to_have_text("Save as version 2")
    expect(page.locator("[data-draft-state]")).to_contain_text("Unsaved edits saved")
    save.click()

    expect(page.get_by_text("Saved as version 2.")).to_be_visible()
    versions = page.get_by_test_id("versions")
    expect(versions.locator("li")).to_have_count(2)
    expect(versions).not_to_contain_text("draft version")
    assert list(rubric.versions.values_list("number", "published")) == [(2, True), (1, True)]
