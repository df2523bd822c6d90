"""Keyboard and narrow-screen use in Debian's Chromium: Tab reaches every review action,
Revert works from the keyboard, focus survives an editor swap, single-key shortcuts are scoped
and switchable, and the top bar works at phone width (390 px)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from reviews.models import VerdictLabel
from tests.browser.test_reviews import queue  # noqa: F401  (the shared review-queue fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ACTIVE = "(() => { const e = document.activeElement; return [e.dataset.action || e.textContent.trim(), e.getAttribute('value')]; })()"


def tab_until(page, wanted: str, limit: int = 15) -> bool:
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate(ACTIVE)[0].startswith(wanted):
            return True
    return False


def test_tab_reaches_agree_disagree_and_revert_and_revert_works_by_keyboard(
    browser_page,
    sign_in,
    teammate,
    queue,  # noqa: F811
):
    rubric, newer, _ = queue
    page = sign_in(browser_page, teammate)
    page.goto(f"/reviews/{rubric.id}/runs/{newer.id}/")
    with page.expect_navigation():
        page.keyboard.press("a")  # agree on c1: its Revert button appears
    assert VerdictLabel.objects.filter(run=newer, criterion_key="c1").exists()

    page.get_by_test_id("criterion-c1").focus()
    assert tab_until(page, "agree")
    assert tab_until(page, "disagree")
    assert tab_until(page, "Revert")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    expect(page.get_by_test_id("human-c1")).to_contain_text("not reviewed")
    assert not VerdictLabel.objects.filter(run=newer, criterion_key="c1").exists()


def test_focus_returns_to_the_control_after_an_editor_swap(
    browser_page, sign_in, owner, make_rubric
):
    rubric = make_rubric()
    page = sign_in(browser_page, owner)
    page.goto(f"/rubrics/{rubric.id}/")

    page.get_by_role("button", name="+ Add criterion").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_test_id("criteria-rows").locator("textarea")).to_have_count(4)
    page.wait_for_function("document.activeElement.getAttribute('value') === 'add'")

    page.get_by_role("button", name="Move criterion 2 up").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#id_c-0-description")).to_have_value('Gives the "order number"')
    # The criterion moved to the top, where Move up is disabled: focus is on its Move down.
    page.wait_for_function("document.activeElement.getAttribute('value') === 'down-0'")


def test_n_in_the_review_queue_starts_reviewing_unless_shortcuts_are_off(
    browser_page,
    sign_in,
    teammate,
    queue,  # noqa: F811
):
    rubric, newer, _ = queue
    page = sign_in(browser_page, teammate)
    page.goto(f"/reviews/{rubric.id}/")
    with page.expect_navigation(url=re.compile(f"/runs/{newer.id}/")):
        page.keyboard.press("n")

    page.goto(f"/reviews/{rubric.id}/")
    page.keyboard.press("?")
    dialog = page.locator("#keys-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("Start reviewing")
    page.locator("#keys-toggle").uncheck()
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    page.reload()
    page.keyboard.press("n")
    page.wait_for_load_state("networkidle")
    assert page.url.endswith(f"/reviews/{rubric.id}/")
    assert page.evaluate("localStorage.getItem('evalsite-shortcuts-off')") == "1"


def test_shortcuts_do_nothing_while_typing_in_an_input(
    browser_page,
    sign_in,
    teammate,
    queue,  # noqa: F811
):
    rubric, newer, _ = queue
    page = sign_in(browser_page, teammate)
    page.goto(f"/reviews/{rubric.id}/runs/{newer.id}/")
    page.get_by_test_id("criterion-c1").locator("summary").click()
    note = page.locator("#note-c1")
    note.focus()
    page.keyboard.type("and a pending note: jk?")
    page.wait_for_load_state("networkidle")
    expect(note).to_have_value("and a pending note: jk?")
    expect(page.locator("#keys-dialog")).to_be_hidden()
    assert page.url.endswith(f"/runs/{newer.id}/")
    assert not VerdictLabel.objects.filter(run=newer).exists()


def test_the_top_bar_works_at_390_px_with_the_user_menu_reachable(
    chromium, live_server, sign_in, owner, team
):
    context = chromium.new_context(base_url=live_server.url, viewport={"width": 390, "height": 844})
    page = context.new_page()
    try:
        sign_in(page, owner)
        page.goto("/runs/")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        summary = page.locator("details.user-menu summary")
        box = summary.bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390
        summary.focus()
        page.keyboard.press("Enter")
        settings = page.get_by_role("link", name="Team settings & API keys")
        expect(settings).to_be_visible()
        box = settings.bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390
        page.keyboard.press("Escape")
        expect(settings).to_be_hidden()
        assert page.evaluate("document.activeElement.tagName") == "SUMMARY"
        expect(
            page.get_by_role("navigation", name="Main").get_by_role("link", name="Alerts")
        ).to_be_attached()
    finally:
        context.close()


def test_no_shortcut_acts_while_typing_in_any_kind_of_field(
    browser_page,
    sign_in,
    teammate,
    queue,  # noqa: F811
):
    rubric, newer, _ = queue
    page = sign_in(browser_page, teammate)
    page.goto(f"/reviews/{rubric.id}/runs/{newer.id}/")
    # The review page's own fields are a textarea and hidden inputs; a text input, a select
    # and an editable element inside a criterion stand for the fields any page may hold.
    page.evaluate(
        """() => {
          const row = document.querySelector('[data-testid="criterion-c1"] .rc-main');
          row.insertAdjacentHTML('beforeend',
            '<input id="t-input"><select id="t-select"><option>a</option><option>d</option>' +
            '<option>n</option></select><div id="t-editable" contenteditable="true"></div>');
        }"""
    )
    for field in ("#t-input", "#t-select", "#t-editable", "#note-c2"):
        if field == "#note-c2":
            page.get_by_test_id("criterion-c2").locator("summary").click()
        page.locator(field).focus()
        for key in ("a", "d", "j", "k", "n", "p", "?"):
            page.keyboard.press(key)
        expect(page.locator(field)).to_be_focused()
    page.wait_for_load_state("networkidle")
    assert page.url.endswith(f"/runs/{newer.id}/")
    expect(page.locator("#keys-dialog")).to_be_hidden()
    expect(page.locator("#t-editable")).to_have_text("adjknp?")
    expect(page.locator("#note-c2")).to_have_value("adjknp?")
    assert not VerdictLabel.objects.filter(run=newer).exists()


def open_and_close_keys(page, *, own: str | None = None) -> None:
    """``?`` opens the overlay (heading, the global list, this page's own keys when ``own``
    names one of them); Escape closes it and focus is back where it was."""
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.locator("a.brand").focus()
    page.keyboard.press("?")
    dialog = page.locator("#keys-dialog")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_role("heading", name="Keyboard shortcuts")).to_be_visible()
    expect(dialog.get_by_test_id("global-keys")).to_contain_text("Home")
    if own:
        expect(dialog.get_by_role("heading", name="On this page")).to_be_visible()
        expect(dialog).to_contain_text(own)
    else:
        expect(dialog.get_by_role("heading", name="On this page")).to_have_count(0)
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(page.locator("a.brand")).to_be_focused()


def test_question_mark_opens_the_shortcut_list_on_every_kind_of_page(
    browser_page,
    sign_in,
    owner,
    queue,  # noqa: F811
):
    rubric, newer, _ = queue
    page = sign_in(browser_page, owner)
    pages = [
        ("/", None),
        ("/runs/", None),
        (f"/runs/{newer.id}/", None),
        (f"/rubrics/{rubric.id}/", None),
        ("/team/", None),  # its context has API keys named ``keys``: not this page's shortcuts
        (f"/reviews/{rubric.id}/", "Start reviewing"),
        (f"/reviews/{rubric.id}/runs/{newer.id}/", "Agree with the judge"),
    ]
    for path, own in pages:
        page.goto(path)
        open_and_close_keys(page, own=own)


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/runs/", "#f-q"),
        ("/team/", "#id_name"),
        ("rubric", "#id_c-0-description"),
    ],
)
def test_typing_a_question_mark_into_a_field_does_not_open_the_list(
    browser_page, sign_in, owner, make_rubric, path, field
):
    rubric = make_rubric()
    page = sign_in(browser_page, owner)
    page.goto(f"/rubrics/{rubric.id}/" if path == "rubric" else path)
    page.locator(field).click()
    page.keyboard.press("End")
    page.keyboard.type(" why?")
    expect(page.locator(field)).to_have_value(re.compile(r" why\?$"))
    expect(page.locator("#keys-dialog")).to_be_hidden()
    expect(page.locator(field)).to_be_focused()


def test_slash_goes_to_the_search_field_and_g_keys_go_to_the_listed_pages(
    browser_page, sign_in, owner
):
    page = sign_in(browser_page, owner)
    page.goto("/runs/")
    page.keyboard.press("?")
    listed = page.locator("#keys-dialog dd[data-keys-search]")
    expect(listed).to_be_visible()
    expect(listed).to_contain_text("search field")
    page.keyboard.press("Escape")
    page.keyboard.press("/")
    expect(page.locator("#f-q")).to_be_focused()

    page.goto("/team/")  # no search field: "/" is not listed
    page.keyboard.press("?")
    expect(page.locator("#keys-dialog")).to_be_visible()
    expect(listed).to_be_hidden()
    page.keyboard.press("Escape")
    with page.expect_navigation(url=re.compile(r"/runs/$")):
        page.keyboard.press("g")
        page.keyboard.press("r")
    with page.expect_navigation(url=re.compile(r"/team/$")):
        page.keyboard.press("g")
        page.keyboard.press("s")


def test_g_a_on_the_review_page_goes_to_alerts_without_agreeing(
    browser_page,
    sign_in,
    teammate,
    queue,  # noqa: F811
):
    rubric, newer, _ = queue
    page = sign_in(browser_page, teammate)
    page.goto(f"/reviews/{rubric.id}/runs/{newer.id}/")
    with page.expect_navigation(url=re.compile(r"/alerts/")):
        page.keyboard.press("g")
        page.keyboard.press("a")
    assert not VerdictLabel.objects.filter(run=newer).exists()
