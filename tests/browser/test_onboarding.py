"""A newcomer's first hour in a real browser: the first user makes a team and adds a second
user, who signs in and sees it; an owner invites someone without an account, who makes one from
the link; a form keeps what was typed when it shows an error."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from teams.models import Membership, Role, Team
from tests.browser.test_accessibility import axe_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_first_user_creates_a_team_and_adds_a_second_user_who_then_sees_it(
    browser_page, chromium, live_server, sign_in, make_user
):
    alice, bob = make_user("alice"), make_user("bob")
    bob.email = "bob@example.com"
    bob.save()
    page = sign_in(browser_page, alice)

    page.goto("/")
    expect(page.get_by_role("heading", name="You are not in a team yet")).to_be_visible()
    page.get_by_label("Team name").fill("Acme Labs")
    page.get_by_role("button", name="Create team").click()
    expect(page.get_by_text("Team “Acme Labs” created")).to_be_visible()

    page.goto("/team/")
    page.get_by_label("Username or email").fill("bob@example.com")
    page.get_by_label("Role", exact=True).select_option("viewer")
    page.get_by_role("button", name="Add member").click()
    expect(page.get_by_text("bob added as viewer.")).to_be_visible()
    team = Team.objects.get()
    assert Membership.objects.get(team=team, user=bob).role == Role.VIEWER

    other = chromium.new_context(base_url=live_server.url)
    try:
        second = sign_in(other.new_page(), bob)
        second.goto("/team/")
        expect(second.get_by_role("heading", name="Acme Labs settings")).to_be_visible()
        expect(second.get_by_test_id("members")).to_contain_text("alice")
        expect(second.get_by_role("button", name="Add member")).to_have_count(0)
    finally:
        other.close()


def test_an_owner_invites_an_address_without_an_account_and_the_link_makes_one_that_sees_the_team(
    browser_page, chromium, live_server, sign_in, owner, team
):
    page = sign_in(browser_page, owner)
    page.goto("/team/")
    page.get_by_label("Username or email").fill("new@example.com")
    page.get_by_label("Role", exact=True).select_option("editor")
    page.get_by_role("button", name="Add member").click()
    link = page.get_by_test_id("new-invite-link").inner_text().strip()
    expect(page.get_by_test_id("invites")).to_contain_text("new@example.com")
    assert link.startswith(live_server.url + "/invite/")
    assert axe_violations(page) == []

    fresh = chromium.new_context(base_url=live_server.url)
    try:
        newcomer = fresh.new_page()
        newcomer.goto(link)
        expect(newcomer.get_by_role("heading", name="Join Acme")).to_be_visible()
        expect(newcomer.get_by_label("Email", exact=True)).to_have_value("new@example.com")
        assert axe_violations(newcomer) == []
        newcomer.get_by_label("Username").fill("newbie")
        newcomer.get_by_label("Password", exact=True).fill("a-long-new-passphrase")
        newcomer.get_by_label("Password confirmation").fill("a-long-new-passphrase")
        newcomer.get_by_role("button", name="Create account and join").click()
        newcomer.wait_for_url(live_server.url + "/")
        expect(newcomer.get_by_text("Welcome! You joined Acme.")).to_be_visible()
        expect(newcomer.locator(".topbar")).to_contain_text("Acme")
        expect(newcomer.locator(".topbar")).to_contain_text("newbie")
    finally:
        fresh.close()
    newbie = Membership.objects.get(team=team, user__username="newbie")
    assert newbie.role == Role.EDITOR and newbie.user.email == "new@example.com"
    page.goto("/team/")
    expect(page.get_by_test_id("members")).to_contain_text("newbie")
    expect(page.get_by_test_id("invites")).to_have_count(0)


def test_the_invite_form_keeps_what_was_typed_when_the_user_is_unknown(
    browser_page, sign_in, owner, team
):
    page = sign_in(browser_page, owner)

    page.goto("/team/")
    page.get_by_label("Username or email").fill("ghost")
    page.get_by_label("Role", exact=True).select_option("owner")
    page.get_by_role("button", name="Add member").click()

    expect(page.get_by_text("no registered user has the username or email")).to_be_visible()
    expect(page.get_by_label("Username or email")).to_have_value("ghost")
    expect(page.get_by_label("Role", exact=True)).to_have_value("owner")


def test_the_editor_says_unsaved_as_you_type_and_warns_before_a_reload_loses_the_draft(
    browser_page, sign_in, owner, make_rubric
):
    rubric = make_rubric()
    page = sign_in(browser_page, owner)
    page.goto(f"/rubrics/{rubric.id}/")
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.type), dialog.accept()))
    # The connection drops: the autosave cannot reach the server, so the draft is only here.
    page.route("**/unsaved-edits/", lambda route: route.abort())

    page.reload()  # nothing changed: no warning
    page.locator("#id_c-0-description").click()
    page.keyboard.type(" and the date")
    expect(page.get_by_text("Unsaved edits", exact=True)).to_be_visible()
    expect(page.locator("[data-draft-state]")).to_contain_text("not saved on the server")
    page.reload()

    assert dialogs == ["beforeunload"]


def test_saving_the_draft_leaves_without_a_warning(browser_page, sign_in, owner, make_rubric):
    rubric = make_rubric()
    page = sign_in(browser_page, owner)
    page.goto(f"/rubrics/{rubric.id}/")
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.type), dialog.accept()))

    page.locator("#id_c-0-description").click()
    page.keyboard.type(" and the date")
    page.get_by_role("button", name="Save as version 2").click()
    expect(page.get_by_text("Saved as version 2.")).to_be_visible()
    page.reload()

    assert dialogs == []


def test_a_new_teams_home_walks_it_to_a_first_run_with_a_curl_snippet_that_works(
    browser_page, sign_in, owner, team, make_rubric, fake_judge
):
    import subprocess

    from runs.models import AgentRun

    page = sign_in(browser_page, owner)
    page.goto("/")
    steps = page.get_by_test_id("first-steps")
    expect(steps).to_contain_text("0 of 3 done")
    expect(page.get_by_test_id("judge-cost")).to_contain_text("No judge calls yet")
    assert axe_violations(page) == []

    rubric = make_rubric()
    steps.get_by_role("link", name="Team settings → API keys").click()
    page.get_by_label("Key name").fill("my agent")
    page.get_by_role("button", name="Create key").click()
    key = page.get_by_test_id("new-key").inner_text().strip()

    page.goto("/")
    expect(steps).to_contain_text("2 of 3 done")
    expect(page.get_by_test_id("step-rubric")).to_have_attribute("data-done", "true")
    expect(page.get_by_test_id("step-key")).to_have_attribute("data-done", "true")
    snippet = page.get_by_test_id("first-run-curl").inner_text()
    assert f"curl -sS {page.url.rstrip('/')}/api/runs" in snippet
    # The snippet as a person runs it, with their key in place of the placeholder line.
    command = (
        "\n".join([f"export EVALSITE_API_KEY='{key}'", *snippet.splitlines()[1:]])
        + " -o /dev/null -w '%{http_code}'"
    )
    sent = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=True)

    assert sent.stdout == "201", sent.stderr
    assert AgentRun.objects.get(team=team).rubric == rubric
    page.goto("/")
    expect(page.get_by_test_id("first-steps")).to_have_count(0)
