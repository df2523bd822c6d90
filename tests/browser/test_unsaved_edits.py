"""The rubric editor keeps unsaved edits on the server as they are made (Debian's Chromium
through Playwright): edit, delete and reorder criteria, reload, find the edits restored with
a notice, discard them and find the saved version again."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from rubrics.models import Rubric, WorkingCopy
from rubrics.working_copy import CriterionRow, WorkingCopyState, working_copy_save
from tests.browser.test_accessibility import axe_violations
from tests.page_helpers import htmx_settled

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_edits_survive_a_reload_and_discarding_them_shows_the_saved_version(
    browser_page, sign_in, owner, make_rubric
):
    rubric = make_rubric()
    page = sign_in(browser_page, owner)
    page.goto(f"/rubrics/{rubric.id}/")
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.type), dialog.accept()))
    rows = page.get_by_test_id("criteria-rows").locator("textarea")

    page.locator("#id_c-0-description").fill('Mentions "refund" and the refund date')
    page.get_by_role("button", name="Delete criterion 2").click()
    expect(rows).to_have_count(2)
    htmx_settled(page)
    page.get_by_role("button", name="Move criterion 2 up").click()
    expect(rows.first).to_have_value('Says "thanks"')
    state = page.locator("[data-draft-state]")
    expect(state).to_have_attribute("role", "status")
    expect(state).to_contain_text("Unsaved edits saved")
    page.reload()

    assert dialogs == []  # the server had the edits: leaving lost nothing
    notice = page.get_by_test_id("unsaved-edits")
    expect(notice).to_contain_text("You have unsaved edits from")
    expect(notice).to_contain_text("(based on version 1)")
    expect(rows).to_have_count(2)
    expect(rows.first).to_have_value('Says "thanks"')
    expect(rows.nth(1)).to_have_value('Mentions "refund" and the refund date')
    expect(state).to_contain_text("Unsaved edits saved")
    assert axe_violations(page) == []

    notice.get_by_role("button", name="Discard edits").click()

    expect(page.get_by_text("Unsaved edits discarded")).to_be_visible()
    expect(page.get_by_test_id("unsaved-edits")).to_have_count(0)
    expect(rows).to_have_count(3)
    expect(rows.first).to_have_value('Mentions "refund"')
    expect(rows.nth(1)).to_have_value('Gives the "order number"')
    assert dialogs == []
    assert not WorkingCopy.objects.exists() and rubric.versions.count() == 1


def test_edits_the_server_refuses_are_named_and_leaving_still_asks(
    browser_page, sign_in, owner, make_rubric
):
    rubric = make_rubric()
    page = sign_in(browser_page, owner)
    page.goto(f"/rubrics/{rubric.id}/")
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.type), dialog.accept()))

    page.locator("#id_c-0-description").fill("x" * 5001)
    state = page.locator("[data-draft-state]")
    expect(state).to_contain_text("Criterion 1 is 5,001 characters; the limit is 5,000.")
    expect(state).to_contain_text("Leaving this page loses them.")
    page.reload()

    assert dialogs == ["beforeunload"]  # (the page's last beacon may still reach the server)


def test_keep_editing_closes_the_notice_and_saving_a_version_ends_the_edits(
    browser_page, sign_in, owner, make_rubric
):
    rubric = make_rubric()
    page = sign_in(browser_page, owner)
    page.goto(f"/rubrics/{rubric.id}/")
    page.locator("#id_c-0-description").fill('Mentions "refund" twice')
    expect(page.locator("[data-draft-state]")).to_contain_text("Unsaved edits saved")
    page.reload()

    page.get_by_role("button", name="Keep editing").click()
    expect(page.get_by_test_id("unsaved-edits")).to_be_hidden()
    page.get_by_role("button", name="Save as version 2").click()

    expect(page.get_by_text("Saved as version 2.")).to_be_visible()
    expect(page.get_by_test_id("unsaved-edits")).to_have_count(0)
    assert not WorkingCopy.objects.exists()


def test_discard_edits_under_the_criteria_ends_edits_made_since_the_page_opened(
    browser_page, sign_in, owner, make_rubric
):
    rubric = make_rubric()
    page = sign_in(browser_page, owner)
    page.goto(f"/rubrics/{rubric.id}/")
    rows = page.get_by_test_id("criteria-rows").locator("textarea")

    page.get_by_role("button", name="Delete criterion 1").click()
    expect(rows).to_have_count(2)
    expect(page.locator("[data-draft-state]")).to_contain_text("Unsaved edits saved")
    assert WorkingCopy.objects.filter(rubric=rubric, user=owner).exists()
    page.get_by_role("button", name="Discard edits").click()

    expect(page.get_by_text("Unsaved edits discarded")).to_be_visible()
    expect(rows).to_have_count(3)
    assert not WorkingCopy.objects.exists()


def test_the_unsaved_edits_time_is_shown_in_the_readers_time_zone(
    chromium, live_server, sign_in, owner, make_rubric
):
    from datetime import UTC, datetime

    rubric = make_rubric()
    state = WorkingCopyState(criteria=[CriterionRow(description="Restored")]).model_dump()
    working_copy_save(rubric=rubric, user=owner, state=state, base_number=1, based_on=None)
    WorkingCopy.objects.update(updated_at=datetime(2026, 12, 4, 10, 0, tzinfo=UTC))
    context = chromium.new_context(base_url=live_server.url, timezone_id="Asia/Kolkata")
    try:
        page = sign_in(context.new_page(), owner)
        page.goto(f"/rubrics/{rubric.id}/")
        when = page.get_by_test_id("unsaved-edits").locator("time")

        expect(when).to_contain_text("15:30")  # 10:00 UTC is 15:30 in Kolkata (UTC+5:30)
        expect(when).to_have_attribute("title", "2026-12-04 10:00 UTC")
    finally:
        context.close()


# The notice's plain form, and the htmx button under the criteria: both "Discard edits".
DISCARD = {
    "notice": lambda page: page.get_by_test_id("unsaved-edits").get_by_role("button"),
    "criteria": lambda page: page.get_by_test_id("discard-edits"),
}


@pytest.mark.parametrize("where", list(DISCARD))
def test_discarding_waits_for_an_autosave_in_flight_so_the_edits_stay_discarded(
    browser_page, sign_in, owner, make_rubric, where
):
    rubric = make_rubric()
    state = WorkingCopyState(criteria=[CriterionRow(description="Restored")]).model_dump()
    working_copy_save(rubric=rubric, user=owner, state=state, base_number=1, based_on=None)
    page = sign_in(browser_page, owner)
    held: list = []
    page.route("**/unsaved-edits/", lambda route: held.append(route))  # slow to reach the server
    page.goto(f"/rubrics/{rubric.id}/")
    expect(page.get_by_test_id("unsaved-edits")).to_be_visible()

    page.locator("#id_c-0-description").fill("Restored, then edited")
    expect(page.locator("[data-draft-state]")).to_have_text("Saving…")
    assert len(held) == 1
    DISCARD[where](page).filter(has_text="Discard edits").click()
    held[0].fulfill(response=held[0].fetch())  # the autosave lands; then the discard goes

    expect(page.get_by_text("Unsaved edits discarded")).to_be_visible()
    expect(page.get_by_test_id("criteria-rows").locator("textarea").first).to_have_value(
        'Mentions "refund"'
    )
    assert not WorkingCopy.objects.exists()


def test_an_editor_page_older_than_the_stored_edits_never_overwrites_them(
    browser_page, sign_in, owner, make_rubric
):
    rubric = make_rubric()
    old = sign_in(browser_page, owner)
    old.goto(f"/rubrics/{rubric.id}/")
    new = old.context.new_page()  # another tab, opened later
    new.goto(f"/rubrics/{rubric.id}/")
    new.locator("#id_c-0-description").fill("Edited in the newer tab")
    expect(new.locator("[data-draft-state]")).to_contain_text("Unsaved edits saved")

    old.bring_to_front()
    old.locator("#id_c-0-description").fill("Edited in the older tab")

    state = old.locator("[data-draft-state]")
    expect(state).to_contain_text("Not saved: newer edits of this rubric were saved at")
    expect(state).to_contain_text("Reload the page to continue from them.")
    copy = WorkingCopy.objects.get(rubric=rubric, user=owner)
    assert copy.state["criteria"][0]["description"] == "Edited in the newer tab"
    new.close()


# --- The New rubric page keeps its input the same way -----------------------------------------


def test_the_new_rubric_page_keeps_its_input_over_a_reload_and_creates_v1_with_it(
    browser_page, sign_in, owner
):
    page = sign_in(browser_page, owner)
    page.goto("/rubrics/new/")
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.type), dialog.accept()))

    page.get_by_label("Name").fill("Support quality")
    page.get_by_label("Criteria").fill('- Mentions "refund"\n- [optional] Says thanks')
    page.get_by_label("Trajectory").check()
    page.get_by_label("Token budget").fill("8000")
    expect(page.locator("[data-draft-state]")).to_contain_text("Unsaved edits saved")
    page.reload()

    assert dialogs == []  # the server had the input: leaving lost nothing
    expect(page.get_by_test_id("unsaved-edits")).to_contain_text("You have unsaved edits from")
    expect(page.get_by_label("Name")).to_have_value("Support quality")
    expect(page.get_by_label("Criteria")).to_have_value(
        '- Mentions "refund"\n- [optional] Says thanks'
    )
    expect(page.get_by_label("Trajectory")).to_be_checked()
    expect(page.get_by_label("Token budget")).to_have_value("8000")

    page.get_by_role("button", name="Create rubric").click()

    expect(page.get_by_text("Rubric “Support quality” created.")).to_be_visible()
    version = Rubric.objects.get().current_version
    assert (version.number, version.judge_view, version.run_token_budget) == (1, "trajectory", 8000)
    assert not WorkingCopy.objects.exists() and dialogs == []


def test_leaving_the_new_rubric_page_with_input_the_server_lacks_asks_first(
    browser_page, sign_in, owner
):
    page = sign_in(browser_page, owner)
    page.route("**/unsaved-edits/", lambda route: route.abort())  # the connection drops
    page.goto("/rubrics/new/")
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.type), dialog.accept()))

    page.get_by_label("Name").fill("Support quality")
    expect(page.locator("[data-draft-state]")).to_contain_text("not saved on the server")
    page.reload()

    assert dialogs == ["beforeunload"]  # (the page's last beacon may still reach the server)


def test_criteria_drafted_from_a_system_prompt_are_edited_pruned_and_created_as_v1(
    browser_page, sign_in, owner, fake_judge
):
    page = sign_in(browser_page, owner)
    page.goto("/rubrics/new/")
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.type), dialog.accept()))

    page.get_by_label("Your agent's system prompt").fill(
        "You must ask for the order number. Never promise a refund date. You should say thanks."
    )
    page.get_by_role("button", name="Draft criteria").click()  # htmx: the card alone
    htmx_settled(page)
    rows = page.get_by_test_id("draft-rows").locator("li")
    expect(rows).to_have_count(3)
    assert axe_violations(page) == []  # the rows: labelled, grouped, readable
    expect(page.get_by_label("Criterion 1")).to_have_value("You must ask for the order number")
    page.get_by_label("Criterion 1").fill("Asks for the order number first")
    rows.nth(1).get_by_label("Keep").uncheck()  # removed
    expect(rows.nth(2).get_by_label("Required")).not_to_be_checked()  # "should": optional
    # A plain post (no name yet: the button skips the browser's required-field check).
    page.get_by_role("button", name="Add kept criteria to the rubric").click()

    expect(page.get_by_test_id("draft-added")).to_contain_text("2 criteria added")
    expect(page.get_by_label("Criteria", exact=True)).to_have_value(
        "- Asks for the order number first\n- [optional] You should say thanks"
    )
    assert not Rubric.objects.exists()  # nothing saved yet
    page.get_by_label("Name").fill("Support quality")
    page.get_by_role("button", name="Create rubric").click()

    expect(page.get_by_text("Rubric “Support quality” created.")).to_be_visible()
    criteria = Rubric.objects.get().current_version.criteria.order_by("position")
    assert [(c.description, c.required) for c in criteria] == [
        ("Asks for the order number first", True),
        ("You should say thanks", False),
    ]
    assert dialogs == []
