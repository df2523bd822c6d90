"""The whole-site walk of test_accessibility.py at 390 px: every page kind over the same
demo-like data, axe's WCAG 2.1 A/AA and best-practice rules, and no page scrolls sideways."""

from __future__ import annotations

import pytest

from tests.browser.test_accessibility import seeded, walk
from tests.browser.test_phone import PHONE

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_every_page_kind_has_no_axe_violations_and_fits_a_phone(
    chromium, live_server, browser_page, sign_in, owner, make_rubric, make_run, fake_judge,
    api_key, settings,
):  # fmt: skip
    page = sign_in(browser_page, owner)
    data = seeded(page, owner, make_rubric, make_run, api_key, fake_judge, settings)

    found = walk(PHONE, chromium, live_server, page, owner, data)
    assert not found, "violations:\n" + "\n".join(found)
