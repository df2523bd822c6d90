"""The dashboard in a real browser (Debian's Chromium through Playwright): authoring a rubric,
reviewing a failed run, filtering, and a re-score watched to the end."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from rubrics.models import Rubric
from tests.page_helpers import htmx_settled, judged_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASTE = """# Support checklist
- Mentions "refund"
- Gives the "order number"
* [optional] Says "thanks"
"""
FAILING = "We will look into it."
PASSING = "Your refund for order number 1234 was sent today, thanks for waiting."


def test_paste_import_a_rubric_preview_it_and_save_it(browser_page, sign_in, owner, team):
    page = sign_in(browser_page, owner)
    page.goto("/rubrics/new/")
    page.fill("#id_name", "Support quality")
    page.fill("textarea[name=criteria_text]", PASTE)

    page.get_by_role("button", name="Preview criteria").click()
    preview = page.get_by_test_id("parsed-criteria")
    expect(preview.locator("li")).to_have_count(3)
    expect(preview.locator(".badge-optional")).to_have_count(1)
    expect(preview).not_to_contain_text("Support checklist")
    optional = preview.get_by_test_id("parsed-line").nth(
        2
    )  # each line as written, then what it became
    expect(optional.locator("code.source")).to_have_text('* [optional] Says "thanks"')
    expect(optional.get_by_test_id("became")).to_have_text('Says "thanks"')
    expect(page.get_by_test_id("skipped-lines")).to_contain_text("line 1 (a Markdown heading)")

    page.get_by_role("button", name="Create rubric").click()
    expect(page.locator("h1")).to_contain_text("Support quality")
    rows = page.get_by_test_id("criteria-rows").locator("textarea")
    expect(rows).to_have_count(3)
    expect(rows.first).to_have_value('Mentions "refund"')
    rubric = Rubric.objects.get(team=team)
    assert rubric.current_version.number == 1


def test_edit_one_criterion_and_see_version_two_and_its_diff(
    browser_page, sign_in, owner, make_rubric
):
    rubric = make_rubric()
    page = sign_in(browser_page, owner)
    page.goto(f"/rubrics/{rubric.id}/")

    page.locator("#id_c-0-description").fill('Mentions "refund" and the refund date')
    page.get_by_role("button", name="Save as version 2").click()

    expect(page.get_by_text("Saved as version 2.")).to_be_visible()
    expect(page.get_by_test_id("versions")).to_contain_text("v2")
    diff = page.get_by_test_id("diff")
    expect(diff.locator("li.reworded")).to_have_count(1)
    expect(diff.locator("ins")).to_contain_text("and the refund date")
    expect(page.locator("#diff h2")).to_have_text("Changes v1 → v2")


def test_draft_rows_are_added_and_moved_in_place_with_htmx(
    browser_page, sign_in, owner, make_rubric
):
    rubric = make_rubric()
    page = sign_in(browser_page, owner)
    page.goto(f"/rubrics/{rubric.id}/")

    page.get_by_role("button", name="+ Add criterion").click()
    expect(page.get_by_test_id("criteria-rows").locator("textarea")).to_have_count(4)
    page.get_by_role("button", name="Move criterion 1 down").click()
    expect(page.locator("#id_c-0-description")).to_have_value('Gives the "order number"')
    # "Unsaved edits" until the autosave has it, then "Unsaved edits saved HH:MM".
    expect(page.locator("[data-draft-state]")).to_contain_text("Unsaved")
    assert rubric.versions.count() == 1


def test_try_the_draft_on_a_stored_run_shows_verdicts_inline(
    browser_page, sign_in, owner, make_rubric, make_run, fake_judge
):
    rubric = make_rubric()
    make_run(output=PASSING, external_id="stored-run")
    page = sign_in(browser_page, owner)
    page.goto(f"/rubrics/{rubric.id}/")

    page.get_by_role("button", name="Try edits").click()

    result = page.locator("#try-result")
    expect(result.get_by_test_id("verdicts").locator("tbody tr")).to_have_count(3)
    expect(result).to_contain_text("Passed")


def test_open_a_failed_run_and_read_its_verdicts_and_alignment_bars(
    browser_page, sign_in, owner, make_rubric, make_run, fake_judge
):
    rubric = make_rubric(alignment_mode="both")
    run = judged_run(make_run, rubric=rubric.slug, output="Your refund is on its way.")
    page = sign_in(browser_page, owner)
    page.goto("/runs/")

    page.get_by_role("link", name=str(run.id)[:19]).click()

    expect(page.get_by_test_id("rubric-passed")).to_have_text("Failed")
    verdicts = page.get_by_test_id("verdicts").locator("tbody tr")
    expect(verdicts).to_have_count(3)
    expect(verdicts.nth(1)).to_contain_text("✗")
    expect(verdicts.nth(1)).to_contain_text("order number")
    bars = page.get_by_test_id("alignment-bars")
    expect(bars).to_have_count(2)
    expect(bars.first.locator(".bar-row")).to_have_count(4)
    expect(page.get_by_test_id("band")).to_be_visible()


def test_filter_runs_by_a_failing_criterion(
    browser_page, sign_in, owner, make_rubric, make_run, fake_judge
):
    rubric = make_rubric()
    judged_run(make_run, rubric=rubric.slug, output=PASSING, external_id="passes")
    judged_run(make_run, rubric=rubric.slug, output="Refund sent.", external_id="no-order-number")
    judged_run(
        make_run, rubric=rubric.slug, output="Order number 7 is late.", external_id="no-refund"
    )
    page = sign_in(browser_page, owner)
    page.goto("/runs/")
    expect(page.get_by_test_id("runs").locator("tbody tr")).to_have_count(3)

    page.select_option("#f-rubric", str(rubric.id))
    expect(page.locator("select#f-criterion")).to_be_visible()
    htmx_settled(page)
    page.select_option("#f-criterion", "c2")

    rows = page.get_by_test_id("runs").locator("tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("no-order-number")
    expect(page).to_have_url(re.compile(r"failing_criterion=c2"))


def test_walk_failing_runs_with_the_keyboard(
    browser_page, sign_in, owner, make_rubric, make_run, fake_judge
):
    rubric = make_rubric()
    for i in range(3):
        judged_run(make_run, rubric=rubric.slug, output=f"Sorry {i}", external_id=f"sorry-{i}")
    page = sign_in(browser_page, owner)
    page.goto(f"/failures/?rubric={rubric.id}")

    page.get_by_test_id("failure-rates").get_by_role("link", name='Mentions "refund"').click()
    expect(page.get_by_test_id("walk-position")).to_have_text("1 of 3")
    # The position is in the HTML before the deferred scripts run: wait for them (the "load"
    # event), or "j" can be pressed before its handler exists.
    page.wait_for_load_state("load")
    page.keyboard.press("j")
    expect(page.get_by_test_id("walk-position")).to_have_text("2 of 3")
    page.keyboard.press("k")
    expect(page.get_by_test_id("walk-position")).to_have_text("1 of 3")


def test_start_a_re_score_and_watch_the_progress_bar_finish(
    browser_page, sign_in, owner, make_rubric, make_run, worker
):
    rubric = make_rubric()
    for i in range(4):
        judged_run(make_run, rubric=rubric.slug, output=FAILING, external_id=f"failing-{i}")
    page = sign_in(browser_page, owner)
    page.goto(f"/rubrics/{rubric.id}/")

    page.get_by_role("button", name="Re-score failing runs").click()

    progress = page.locator("#batch-progress")
    expect(progress).to_have_attribute("data-status", "completed", timeout=60_000)
    expect(page.get_by_test_id("batch-done")).to_have_text("4 of 4 runs done")
    expect(page.locator(".progress")).to_have_attribute("aria-valuenow", "100.0")


def test_authoring_works_without_javascript(chromium, live_server, owner, team):
    context = chromium.new_context(base_url=live_server.url, java_script_enabled=False)
    page = context.new_page()
    try:
        page.goto("/accounts/login/")
        page.fill("#id_username", owner.get_username())
        page.fill("#id_password", "correct-horse-battery")
        page.click("button[type=submit]")
        page.goto("/rubrics/new/")
        page.fill("#id_name", "No JS")
        page.fill("textarea[name=criteria_text]", "- One\n- Two")
        page.get_by_role("button", name="Create rubric").click()
        page.get_by_role("button", name="+ Add criterion").click()
        page.locator("#id_c-2-description").fill("Three")
        page.get_by_role("button", name="Save as version 2").click()

        expect(page.get_by_test_id("versions")).to_contain_text("v2")
        assert Rubric.objects.get(team=team).current_version.criteria.count() == 3
    finally:
        context.close()
