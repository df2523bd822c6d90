"""Visible focus of at least 3:1 (issue 17, WCAG 2.4.11 / 1.4.11): controls reached by Tab in
the dark top bar (its open menu included), a checkbox, a text field, buttons and a link on team
settings. The ring's colour (outline, else box-shadow) is measured in the page against the
background next to it: what is painted just outside the ring, alpha layers composited."""

from __future__ import annotations

from typing import Any

import pytest

from teams.services import membership_set

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Returns {kind, ratio, ring, background} for the focused element.
MEASURE = """
el => {
  const parse = text => {
    const m = /rgba?\\(([^)]*)\\)/.exec(text || "");
    if (!m) return null;
    const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const over = (top, under) => [0, 1, 2].map(i => top[i] * top[3] + under[i] * (1 - top[3])).concat([1]);
  const effective = node => {
    const layers = [];
    for (let n = node; n; n = n.parentElement) {
      const c = parse(getComputedStyle(n).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    return layers.reduceRight((under, layer) => over(layer, under), [255, 255, 255, 1]);
  };
  const lum = c => c.slice(0, 3).map(v => v / 255)
    .map(v => v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4))
    .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
  const contrast = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
  const s = getComputedStyle(el);
  let kind = "none", ring = null, reach = 0;
  if (s.outlineStyle !== "none" && parseFloat(s.outlineWidth) > 0) {
    kind = "outline"; ring = parse(s.outlineColor);
    reach = parseFloat(s.outlineWidth) + Math.max(0, parseFloat(s.outlineOffset) || 0);
  } else if (s.boxShadow && s.boxShadow !== "none") {
    kind = "box-shadow"; ring = parse(s.boxShadow);
    const px = (s.boxShadow.match(/(-?[\\d.]+)px/g) || []).map(parseFloat);
    reach = px.length > 3 ? px[3] : 0;
  }
  if (!ring) return {kind, ratio: 0};
  // What is painted just outside the ring: left of the element, else right of it.
  const r = el.getBoundingClientRect();
  const y = r.top + r.height / 2;
  let x = r.left - reach - 2;
  if (x < 0) x = r.right + reach + 2;
  const next = document.elementsFromPoint(x, y).find(n => n !== el && !el.contains(n)) || document.body;
  const background = effective(next);
  return {kind, ratio: contrast(over(ring, background), background), ring, background};
}
"""


def tab_to(page: Any, selector: str, limit: int = 120) -> None:
    """Press Tab until the focused element matches ``selector``."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        # Null while a navigation swaps the document: press again rather than fail.
        if page.evaluate(
            "s => !!document.activeElement && document.activeElement.matches(s)", selector
        ):
            return
    raise AssertionError(f"Tab never reached {selector}")


def focus_ratio(page: Any, selector: str, name: str, found: list[str]) -> None:
    tab_to(page, selector)
    result = page.evaluate(MEASURE, page.evaluate_handle("document.activeElement"))
    if result["ratio"] < 3:
        found.append(f"{name} ({selector}): {result}")


def test_keyboard_focus_rings_have_3_to_1_contrast_against_what_surrounds_them(
    browser_page, sign_in, owner, other_team
):
    membership_set(team=other_team, user=owner, role="viewer")  # the top bar's team switch
    page = sign_in(browser_page, owner)
    page.goto("/team/")
    page.evaluate("document.activeElement && document.activeElement.blur()")
    found: list[str] = []

    focus_ratio(page, ".skip-link", "skip link over the top bar", found)
    focus_ratio(page, ".topbar .brand", "brand link in the top bar", found)
    focus_ratio(page, ".topbar .nav a", "top bar nav link", found)
    focus_ratio(page, "#team-switch", "team switch select", found)
    focus_ratio(page, ".user-menu summary", "user menu button", found)
    page.keyboard.press("Enter")  # open the menu
    focus_ratio(page, ".user-menu .menu a", "link in the open user menu", found)
    page.keyboard.press("Escape")
    page.locator(".user-menu").evaluate("d => d.removeAttribute('open')")
    focus_ratio(page, "#id_name", "text field", found)
    focus_ratio(page, "button.btn-primary", "primary button", found)
    focus_ratio(page, "#id_retention_delete_protected", "checkbox", found)
    focus_ratio(page, "button.btn:not(.btn-primary):not(.btn-danger)", "plain button", found)
    focus_ratio(page, "main a[href='/team/otel/']", "link in running text", found)

    page.get_by_placeholder("New key name, e.g. CI pipeline").fill("ci")
    page.get_by_role("button", name="Create key").click()
    page.locator(".secret button").wait_for()  # the POST's answer has loaded
    page.evaluate("document.activeElement && document.activeElement.blur()")
    focus_ratio(page, ".secret button", "Copy button on the dark secret box", found)

    assert not found, "focus rings under 3:1:\n" + "\n".join(found)
