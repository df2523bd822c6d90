"""Reviewing in Debian's Chromium with the keyboard only (a / d / j / k / n) and with the mouse
only, each checked against the labels and notes the reviewer meant; and the output under review
readable on a laptop and a phone; a suggested criterion edit shown in the rubric editor and
accepted into a draft version and a comparison."""

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from reviews.models import Suggestion, VerdictLabel, VerdictOverride
from reviews.services import Reviewer, override_create
from reviews.services.suggestions import suggestion_generate, suggestions_request
from runs.models import AgentRun
from tests.browser.test_trajectory import forty_steps
from tests.reviews.conftest import CRITERIA, FAILING, judge_pending

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def queue(make_rubric, make_run, fake_judge):
    rubric = make_rubric(criteria=CRITERIA, alignment_mode="off")
    older = make_run(rubric=rubric.slug, external_id="older-run")
    newer = make_run(rubric=rubric.slug, external_id="newer-run")
    judge_pending()
    return rubric, newer, older


# A note full of the review page's shortcut letters (a, d, j, k, n, p): typed into the note,
# none of them may act.
NOTE = "A bad, odd ad: it jokes and jabs, kinda awkward; and no apology, nada, a dud"


def history(run) -> list[tuple[str, bool | None, str]]:
    """Every change made to ``run``'s labels, oldest first: criterion, verdict, note."""
    rows = VerdictOverride.objects.filter(run=run).order_by("created_at")
    return [(o.criterion_key, o.to_satisfied, o.note) for o in rows]


def test_a_reviewer_reviews_a_run_with_the_mouse_only(browser_page, sign_in, teammate, queue):
    rubric, newer, _ = queue
    page = sign_in(browser_page, teammate)
    page.goto(f"/reviews/{rubric.id}/")
    with page.expect_navigation():
        page.get_by_test_id("start-review").click()

    with page.expect_navigation():
        page.get_by_test_id("criterion-c1").locator('[data-action="agree"]').click()
    c2 = page.get_by_test_id("criterion-c2")
    c2.locator('[data-action="disagree"]').click()
    # The caret is in the note at once (typed straight after the click, nothing waited for):
    # what the reviewer types is the note, never a shortcut.
    page.keyboard.type(NOTE)
    expect(c2.locator("textarea[name=note]")).to_be_focused()
    expect(c2.locator("textarea[name=note]")).to_have_value(NOTE)
    with page.expect_navigation():
        c2.get_by_role("button", name="Mark not satisfied").click()

    assert history(newer) == [("c1", True, ""), ("c2", False, NOTE)]
    labels = {lb.criterion_key: lb.satisfied for lb in VerdictLabel.objects.filter(run=newer)}
    assert labels == {"c1": True, "c2": False}  # c3 untouched
    expect(page.get_by_test_id("criterion-c2").locator(".rc-note")).to_have_text(f"Note: {NOTE}")


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
    page.keyboard.type(NOTE)
    page.keyboard.press("Shift+Enter")  # a new line, not a save
    page.keyboard.type("second line")
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
    assert history(newer) == [
        ("c1", True, ""),
        ("c2", False, f"{NOTE}\nsecond line"),
        ("c3", True, ""),
    ]
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


LONG_SYSTEM = "You are a polite support agent. " * 40
LONG_OUTPUT = "\n\n".join(
    f"Paragraph {i}: your refund for order number 1234 was sent today, thanks for waiting."
    for i in range(60)
)
SHOTS = os.environ.get("EVALSITE_SCREENSHOTS_DIR")
# The height of an element's part that shows: its box cut by the window and by every ancestor
# that clips or scrolls.
VISIBLE_HEIGHT = """el => {
  let r = el.getBoundingClientRect(), top = Math.max(r.top, 0);
  let bottom = Math.min(r.bottom, window.innerHeight);
  for (let a = el.parentElement; a; a = a.parentElement) {
    if (getComputedStyle(a).overflowY === "visible") continue;
    const b = a.getBoundingClientRect();
    top = Math.max(top, b.top); bottom = Math.min(bottom, b.bottom);
  }
  return Math.max(0, bottom - top);
}"""


@pytest.mark.parametrize("width,height", [(1280, 900), (390, 844)])
def test_the_output_under_review_is_readable_on_a_laptop_and_a_phone(
    browser_page, sign_in, teammate, make_rubric, make_run, fake_judge, width, height, tmp_path
):
    rubric = make_rubric(criteria=CRITERIA, alignment_mode="off")
    # A long system prompt and task, a 40-step trajectory, and a long final answer.
    messages, steps = forty_steps()
    messages[0]["content"] = LONG_SYSTEM
    steps.append({"role": "assistant", "content": LONG_OUTPUT})
    run = make_run(rubric=rubric.slug, input={"messages": messages}, output=steps)
    judge_pending()
    page = sign_in(browser_page, teammate)
    page.set_viewport_size({"width": width, "height": height})
    page.goto(f"/reviews/{rubric.id}/runs/{run.id}/")
    output = page.get_by_test_id("output")
    output.scroll_into_view_if_needed()
    page.screenshot(path=str(Path(SHOTS or tmp_path) / f"review-{width}.png"))

    # How much of the box shows once scrolled to: inside the window and every clipping box.
    assert output.evaluate(VISIBLE_HEIGHT) >= 200
    # No box hides what it holds (they used to be squeezed to their headers, clipped).
    clipped = page.eval_on_selector_all(
        ".conversation > .msg",
        "els => els.map(e => e.scrollHeight - e.clientHeight).filter(d => d > 1)",
    )
    assert clipped == []
    # All of the output can be read: the last paragraph is reached by scrolling (the page or
    # the column), never cut off by its box.
    last = output.get_by_text("Paragraph 59:")
    last.scroll_into_view_if_needed()
    expect(last).to_be_in_viewport()


def test_the_editor_shows_a_suggested_edit_beside_the_criterion_and_accept_compares_it(
    browser_page, sign_in, teammate, team, make_rubric, make_run, fake_judge
):
    rubric = make_rubric(criteria=CRITERIA, alignment_mode="off")
    runs = [make_run(rubric=rubric.slug, output=f"{FAILING} ({i})") for i in range(3)]
    judge_pending()
    for run in runs:
        run.refresh_from_db()
        override_create(
            run=run, criterion_key="c2", satisfied=True, note="Not needed here",
            reviewer=Reviewer(user=teammate),
        )  # fmt: skip
    [suggestion] = suggestions_request(team=team, rubric=rubric, criterion_id="c2")
    assert suggestion_generate(suggestion_id=suggestion.pk) == "ready"

    page = sign_in(browser_page, teammate)
    page.goto(f"/rubrics/{rubric.id}/")
    edit = page.get_by_test_id(f"suggestion-{suggestion.pk}")  # loaded into the editor by htmx
    expect(edit.get_by_test_id("suggestion-text")).to_have_text("Gives the order number")
    with page.expect_navigation():
        edit.get_by_test_id("accept-suggestion").click()

    suggestion.refresh_from_db()
    assert suggestion.status == "accepted" and suggestion.draft.published is False
    assert page.url.endswith(f"/reviews/comparisons/{suggestion.comparison_id}/")
    expect(page.get_by_text(f"Saved as draft version {suggestion.draft.number}")).to_be_visible()
    assert Suggestion.objects.get(pk=suggestion.pk).comparison.version_b_id == suggestion.draft_id
