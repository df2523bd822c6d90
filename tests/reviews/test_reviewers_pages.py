"""Several reviewers through the pages (two signed-in clients) and the API."""

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from reviews.models import ReviewerLabel, VerdictLabel
from reviews.services import Reviewer, override_create, review_confirm
from teams.services import api_key_create
from tests.api_client import Api
from tests.conftest import member

from .conftest import FAILING


@pytest.fixture
def signed_in(db):
    def make(user) -> Client:
        client = Client()
        client.force_login(user)
        return client

    return make


@pytest.fixture
def tara(make_user, team):
    return member(make_user, team, "tara", "editor")


def verdict_form(client, rubric, run, satisfied: bool, note: str = "", key: str = "c2"):
    return client.post(
        reverse("reviews:verdict", args=[rubric.id, run.id]),
        {"criterion": key, "satisfied": "true" if satisfied else "false", "note": note},
    )


def test_two_signed_in_reviewers_who_disagree_make_a_disputed_criterion(
    signed_in, teammate, owner, tara, judged_run, rubric
):
    teo, olivia = signed_in(teammate), signed_in(owner)
    run = judged_run(output=FAILING)  # the judge fails c2
    assert verdict_form(teo, rubric, run, True, "1234 <b>is</b> there").status_code == 302
    assert verdict_form(olivia, rubric, run, False).status_code == 302

    page = olivia.get(reverse("reviews:review", args=[rubric.id, run.id])).content.decode()

    assert not VerdictLabel.objects.filter(run=run, criterion_key="c2").exists()
    assert ReviewerLabel.objects.filter(run=run, criterion_key="c2").count() == 2
    assert "disputed" in page and 'data-testid="votes-c2"' in page
    assert "teo: ✓ satisfied — 1234 &lt;b&gt;is&lt;/b&gt; there" in page
    assert "olivia: ✗ not satisfied" in page
    # Olivia's Revert undoes her own verdict, not teo's.
    mine = ReviewerLabel.objects.get(run=run, reviewer_key=f"user:{owner.pk}").source_id
    theirs = ReviewerLabel.objects.get(run=run, reviewer_key=f"user:{teammate.pk}").source_id
    assert f'name="change" value="{mine}"' in page and str(theirs) not in page

    next_url = reverse("reviews:next", args=[rubric.id])
    for client in (teo, olivia):
        answer = client.post(next_url, {"second_opinion": "1"})
        assert answer.status_code == 302 and "/runs/" not in answer.url
    answer = signed_in(tara).post(next_url, {"second_opinion": "1"})
    assert answer.url.startswith(reverse("reviews:review", args=[rubric.id, run.id]))
    assert "second_opinion=1" in answer.url

    queue = teo.get(reverse("reviews:queue", args=[rubric.id]) + "?second_opinion=1")
    assert 'badge-warn" title="Reviewers tie on 1 criterion">disputed' in queue.content.decode()
    panel = teo.get(reverse("reviews:run_panel", args=[run.id])).content.decode()
    assert 'data-testid="panel-disputed"' in panel and "disputed: c2" in panel


def test_a_majority_of_two_to_one_shows_who_said_what(
    signed_in, teammate, owner, tara, judged_run, rubric
):
    run = judged_run(output=FAILING)
    verdict_form(signed_in(teammate), rubric, run, True, "named")
    verdict_form(signed_in(owner), rubric, run, False)
    verdict_form(signed_in(tara), rubric, run, True, "named too")

    page = signed_in(tara).get(reverse("reviews:review", args=[rubric.id, run.id]))

    human = page.content.decode().split('data-testid="human-c2"')[1].split("</span>\n")[0]
    assert "(overridden)" in human and "(2 of 3)" in human
    run.refresh_from_db()
    assert run.passed is True


def agreement_page(client, rubric) -> tuple[str, int]:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(reverse("reviews:agreement", args=[rubric.id]))
    assert response.status_code == 200
    return response.content.decode(), len(ctx.captured_queries)


def test_the_agreement_page_shows_reviewers_kappa_and_disputed_runs_in_constant_queries(
    signed_in, teammate, judged_run, rubric, reviewer, other_reviewer, tara
):
    client = signed_in(teammate)
    first = judged_run(external_id="first-run")
    for who in (reviewer, other_reviewer):
        review_confirm(run=first, criterion_key="c1", reviewer=who)

    def dispute(n: int) -> None:
        run = judged_run(output=FAILING, external_id=f"disputed-{n}")
        override_create(run=run, criterion_key="c2", satisfied=True, note="n", reviewer=reviewer)
        review_confirm(run=run, criterion_key="c2", reviewer=other_reviewer)

    dispute(0)
    page, few = agreement_page(client, rubric)
    assert "Cohen, 2 reviewers, 1 run" in page
    assert "1 criterion where reviewers tie" in page

    for n in (1, 2):
        dispute(n)
    review_confirm(run=first, criterion_key="c1", reviewer=Reviewer(user=tara))

    page, more = agreement_page(client, rubric)

    assert more == few
    assert "Fleiss, 3 reviewers, 1 run" in page  # c1 on first-run: teo, olivia and tara
    assert "Cohen, 2 reviewers, 3 runs" in page  # c2: teo and olivia on each disputed run
    disputed = page.split('data-testid="disputed"')[1]
    assert "3 criteria where reviewers tie" in disputed
    assert all(f"disputed-{n}" in disputed for n in range(3)) and "first-run" not in disputed


def test_the_agreement_page_says_so_when_nobody_disputes(signed_in, teammate, rubric):
    page, _ = agreement_page(signed_in(teammate), rubric)

    assert "No disputes" in page


def test_the_api_reports_each_reviewers_verdict_the_majority_and_the_dispute(
    api, judged_run, rubric, team, session_api, viewer
):
    _, raw = api_key_create(team=team, name="second reviewer")
    second = Api(raw)
    run = judged_run(output=FAILING)
    path = f"/runs/{run.id}/overrides"

    one = api.post(path, {"criterion_id": "c2", "satisfied": True, "note": "named"})
    two = second.post(path, {"criterion_id": "c2", "satisfied": False, "note": "not named"})

    assert one.status_code == 201 and one.json()["verdict"]["human_satisfied"] is True
    state = two.json()["verdict"]
    assert two.status_code == 201 and state["disputed"] is True
    assert state["human_satisfied"] is None and state["satisfied"] is False
    assert [(r["satisfied"], r["note"]) for r in state["reviews"]] == [
        (True, "named"), (False, "not named"),
    ]  # fmt: skip
    assert state["reviews"][1]["reviewer"].startswith("API key second reviewer")
    assert two.json()["run"]["passed"] is False

    listing = session_api(viewer).get(path).json()
    c2 = next(v for v in listing["verdicts"] if v["criterion_id"] == "c2")
    assert c2["disputed"] is True and len(c2["reviews"]) == 2
    assert c2["reviews"][0]["change_id"] == one.json()["override"]["id"]

    body = api.get(f"/rubrics/{rubric.slug}/agreement").json()
    assert body["disputed_total"] == 1
    assert body["disputed"] == [
        {"run_id": str(run.id), "external_id": run.external_id or "", "criterion_id": "c2",
         "satisfied": 1, "not_satisfied": 1},
    ]  # fmt: skip
    c2 = next(c for c in body["criteria"] if c["criterion_id"] == "c2")
    assert c2["labelled"] == 0  # a tie is no label for judge–human agreement
    # One run, one yes and one no: p_o = 0, p_e = 1 × 0 + 0 × 1 = 0, so kappa = 0.
    assert c2["reviewers"] == {"items": 1, "reviewers": 2, "method": "cohen", "kappa": 0.0}
