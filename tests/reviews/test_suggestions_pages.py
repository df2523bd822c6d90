"""Suggested edits on the pages: beside each criterion on the review page and in the panel the
rubric editor loads, with "Suggest an edit", Accept and Dismiss as plain forms (CSRF, escaped
text, redirect after POST); viewers read them without the buttons."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from reviews.models import Suggestion
from reviews.services import override_create
from reviews.services.suggestions import suggestion_generate, suggestions_request

from .conftest import FAILING

NOTE = "Not needed: the task names the order already."


@pytest.fixture
def client_for(db):
    def make(user, enforce_csrf: bool = False) -> Client:
        client = Client(enforce_csrf_checks=enforce_csrf)
        client.force_login(user)
        return client

    return make


@pytest.fixture
def disagreed(judged_run, reviewer) -> list[Any]:
    runs = [judged_run(output=f"{FAILING} (#{i})") for i in range(3)]
    for run in runs:
        override_create(run=run, criterion_key="c2", satisfied=True, note=NOTE, reviewer=reviewer)
    return runs


def _page(client, url: str, **headers: str) -> str:
    response = client.get(url, headers=headers)
    assert response.status_code == 200, response.content[:500]
    return response.content.decode()


def test_the_review_page_offers_suggest_an_edit_beside_a_criterion_with_enough_disagreements(
    client_for, teammate, rubric, disagreed
):
    client = client_for(teammate)
    review = reverse("reviews:review", args=[rubric.id, disagreed[0].id])
    page = _page(client, review)
    assert 'data-testid="suggest-c2"' in page and 'data-testid="suggest-c1"' not in page

    asked = client.post(
        reverse("reviews:suggest_start", args=[rubric.id]), {"criterion": "c2", "next": review}
    )
    assert asked.status_code == 302 and asked["Location"] == review
    assert Suggestion.objects.get(rubric=rubric).criterion_key == "c2"
    page = _page(client, review)
    assert "Asking the judge for an edit of c2" in page
    assert 'data-testid="suggest-c2"' not in page  # one pending suggestion at a time


def test_a_ready_suggestion_is_shown_escaped_and_accept_opens_the_comparison(
    client_for, teammate, team, rubric, disagreed
):
    [suggestion] = suggestions_request(team=team, rubric=rubric, criterion_id="c2")
    suggestion_generate(suggestion_id=suggestion.pk)
    Suggestion.objects.filter(pk=suggestion.pk).update(text="Gives the <b>order</b> number")
    client = client_for(teammate)
    page = _page(client, reverse("reviews:review", args=[rubric.id, disagreed[0].id]))
    assert "Gives the &lt;b&gt;order&lt;/b&gt; number" in page
    assert 'data-testid="accept-suggestion"' in page

    accepted = client.post(reverse("reviews:suggestion_accept", args=[rubric.id, suggestion.pk]))
    suggestion.refresh_from_db()
    assert suggestion.status == "accepted"
    assert accepted["Location"] == reverse("reviews:comparison", args=[suggestion.comparison_id])
    shown = _page(client, accepted["Location"])
    assert f"draft version {suggestion.draft.number}" in shown


def test_the_editor_loads_the_panel_which_polls_while_pending_and_dismiss_sets_it_aside(
    client_for, teammate, team, rubric, disagreed
):
    client = client_for(teammate)
    editor = _page(client, reverse("rubric_detail", args=[rubric.id]))
    panel = reverse("reviews:suggestions", args=[rubric.id])
    assert f'hx-get="{panel}?next=' in editor
    [suggestion] = suggestions_request(team=team, rubric=rubric, criterion_id="c2")
    fragment = _page(client, panel, **{"HX-Request": "true"})
    assert "<html" not in fragment and 'hx-trigger="every 2s"' in fragment

    suggestion_generate(suggestion_id=suggestion.pk)
    fragment = _page(client, panel, **{"HX-Request": "true"})
    assert "every 2s" not in fragment and "Gives the order number" in fragment
    dismissed = client.post(
        reverse("reviews:suggestion_dismiss", args=[rubric.id, suggestion.pk]), {"next": "//evil"}
    )
    assert dismissed["Location"] == panel  # only a path of this site
    asked = client.post(reverse("reviews:suggest_start", args=[rubric.id]), {"next": "%%%"})
    assert asked.status_code == 302 and asked["Location"] == panel
    suggestion.refresh_from_db()
    assert suggestion.status == "dismissed"
    assert "Gives the order number" not in _page(client, panel)


def test_a_viewer_sees_suggestions_without_buttons_and_cannot_post(
    client_for, viewer, team, rubric, disagreed
):
    [suggestion] = suggestions_request(team=team, rubric=rubric, criterion_id="c2")
    suggestion_generate(suggestion_id=suggestion.pk)
    client = client_for(viewer)
    page = _page(client, reverse("reviews:suggestions", args=[rubric.id]))
    assert "Gives the order number" in page and "accept-suggestion" not in page
    assert "suggest-c2" not in page
    posted = client.post(reverse("reviews:suggestion_accept", args=[rubric.id, suggestion.pk]))
    assert posted.status_code == 403
    suggestion.refresh_from_db()
    assert suggestion.status == "ready"


def test_the_forms_need_the_csrf_token_and_another_teams_rubric_is_404(
    client_for, teammate, stranger, rubric, disagreed
):
    strict = client_for(teammate, enforce_csrf=True)
    ask = reverse("reviews:suggest_start", args=[rubric.id])
    assert strict.post(ask, {"criterion": "c2"}).status_code == 403
    assert not Suggestion.objects.exists()
    assert (
        client_for(stranger).get(reverse("reviews:suggestions", args=[rubric.id])).status_code
        == 404
    )
