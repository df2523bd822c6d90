"""A criterion of 6,000 characters in Debian's Chromium at 1280 px: the paste previews (new
rubric, the editor's "Paste a list") wrap it inside a readable column instead of squeezing
the column, or the criterion beside the line as written, to a sliver."""

from __future__ import annotations

from typing import Any

import pytest

from tests.page_helpers import htmx_settled

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Words and one unbroken run of letters: both must wrap within the column.
LONG = ("Mentions the refund and its current status " * 120 + "x" * 1000)[:6000]
MIN_COLUMN_PX = 200


def widths(page: Any, selector: str) -> dict[str, float]:
    """The widths (px) of the preview box, its last parsed line (the long one), and that
    line's two texts; and how far the page scrolls sideways."""
    return page.evaluate(
        """sel => {
          const box = document.querySelector(sel);
          const line = [...box.querySelectorAll('[data-testid=parsed-line]')].at(-1);
          const w = el => el.getBoundingClientRect().width;
          return {box: w(box), line: w(line), source: w(line.querySelector('.source')),
                  became: w(line.querySelector('[data-testid=became]')),
                  overflow: document.documentElement.scrollWidth - window.innerWidth};
        }""",
        selector,
    )


def assert_readable(found: dict[str, float]) -> None:
    assert found["box"] >= MIN_COLUMN_PX, found
    assert found["became"] >= MIN_COLUMN_PX, found
    assert found["source"] >= MIN_COLUMN_PX / 2, found
    assert found["became"] <= found["line"] and found["line"] <= found["box"], found
    assert found["overflow"] <= 0, found


def test_a_6000_character_criterion_wraps_inside_the_paste_previews(
    browser_page, sign_in, owner, make_rubric
):
    rubric = make_rubric(name="Support quality")
    page = sign_in(browser_page, owner)
    page.set_viewport_size({"width": 1280, "height": 900})

    page.goto("/rubrics/new/")
    page.fill("#id_name", "Long criteria")
    page.locator("textarea[name=criteria_text]").fill(f"- Says thanks\n- {LONG}\n")
    page.get_by_role("button", name="Preview criteria").click()
    page.get_by_test_id("parsed-line").nth(1).wait_for()
    htmx_settled(page)
    found = page.evaluate(
        "() => [...document.querySelectorAll('#import-preview [data-testid=became]')]"
        ".map(el => el.textContent.length)"
    )
    assert found == [len("Says thanks"), len(LONG)]  # the whole criterion is shown
    assert_readable(widths(page, "#import-preview"))

    page.goto(f"/rubrics/{rubric.id}/")
    page.get_by_text("Paste a list").click()
    page.locator("#id_import_text").fill(f"- {LONG}\n")
    page.get_by_role("button", name="Preview", exact=True).click()
    page.get_by_test_id("import-preview").wait_for()
    htmx_settled(page)
    assert_readable(widths(page, "[data-testid=import-preview]"))
