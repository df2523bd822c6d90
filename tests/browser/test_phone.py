"""Every page kind fits a 390 px phone: at 390×844 no page scrolls sideways. What is wider
than the screen (a table) scrolls inside its own box; forms stack; long words wrap.

``overflow`` is the measure; test_accessibility.py's whole-site walk applies it to every page
kind at 390 px over the same seeded data as its axe pass (one seeding for both)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.test_reviews import VISIBLE_HEIGHT
from tests.browser.test_screenshots import label_some_runs, seed

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}

# The elements reaching past the window's right (or left) edge, outermost first, leaving out
# those inside a box that scrolls or clips sideways (a table in its scrolling wrapper).
TOO_WIDE = """() => {
  const width = document.documentElement.clientWidth;
  // Clipped by a box that scrolls sideways, the containing block chain followed (an absolute
  // element escapes boxes below its positioned ancestor).
  const inScrollBox = el => {
    let pos = getComputedStyle(el).position;
    for (let a = el.parentElement; a && a !== document.documentElement; a = a.parentElement) {
      const style = getComputedStyle(a);
      if (pos === "fixed" || (pos === "absolute" && style.position === "static")) continue;
      if (style.overflowX !== "visible") return true;
      pos = ["absolute", "fixed"].includes(style.position) ? style.position : "static";
    }
    return false;
  };
  const name = el => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "")
    + [...el.classList].map(c => "." + c).join("")
    + (el.dataset.testid ? `[data-testid=${el.dataset.testid}]` : "");
  const path = el => {
    const parts = [];
    for (let a = el; a && a !== document.body; a = a.parentElement) parts.unshift(name(a));
    return parts.slice(-4).join(" > ");
  };
  const wide = [...document.body.querySelectorAll("*")].filter(el => {
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.right > width + 0.5 && !inScrollBox(el);
  });
  const outermost = wide.filter(el => !wide.includes(el.parentElement));
  return outermost.sort((a, b) => b.getBoundingClientRect().width - a.getBoundingClientRect().width)
    .slice(0, 6)
    .map(el => `${path(el)} (${Math.round(el.getBoundingClientRect().width)} px wide)`);
}"""


def overflow(page: Any) -> str | None:
    """None when the page fits the window; else how wide it is and what sticks out."""
    page.wait_for_load_state("networkidle")
    scroll_width = page.evaluate("document.documentElement.scrollWidth")
    if scroll_width <= PHONE["width"]:
        return None
    culprits = "; ".join(page.evaluate(TOO_WIDE)) or "nothing found outside a scroll box"
    return f"{page.url} is {scroll_width} px wide: {culprits}"


def test_tables_on_a_phone_scroll_in_a_box_the_keyboard_reaches(
    browser_page, sign_in, owner, make_rubric, make_run, fake_judge
):
    data = seed(make_rubric, make_run)
    reviewed = label_some_runs(data["support"], owner)
    page = sign_in(browser_page, owner)
    page.set_viewport_size(PHONE)
    page.goto("/runs/")
    box = page.get_by_role("region", name="Runs table")
    # The runs table is wider than the phone: its box scrolls, the page does not.
    assert box.evaluate("el => el.scrollWidth > el.clientWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    # The box takes the keyboard focus, and the arrow keys scroll it.
    for _ in range(100):
        page.keyboard.press("Tab")
        if box.evaluate("el => el === document.activeElement"):
            break
    else:
        pytest.fail("the runs table's box never takes the keyboard focus")
    page.keyboard.press("ArrowRight")
    page.wait_for_function("el => el.scrollLeft > 0", arg=box.element_handle())
    # The filters stack one per row, each as wide as the form.
    rows = page.eval_on_selector_all(
        "form.filters > .field",
        "els => els.map(e => [Math.round(e.getBoundingClientRect().left),"
        " Math.round(e.getBoundingClientRect().width), e.parentElement.clientWidth])",
    )
    assert len(rows) > 2 and len({left for left, _, _ in rows}) == 1
    assert all(width >= inner - 40 for _, width, inner in rows), rows

    # The review desk: once scrolled to, the output under review shows whole or at least 200 px
    # of it (test_reviews.py measures a long output at 390 px as well).
    page.goto(f"/reviews/{data['support'].id}/runs/{reviewed[0].id}/")
    output = page.get_by_test_id("output")
    output.scroll_into_view_if_needed()
    height = output.evaluate("el => el.getBoundingClientRect().height")
    assert output.evaluate(VISIBLE_HEIGHT) >= min(200, height - 1)
