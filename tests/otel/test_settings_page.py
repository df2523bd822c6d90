"""The team settings page for OpenTelemetry: owners set a default rubric per service.name."""

from __future__ import annotations

from django.test import Client

from runs.models import OtelServiceRubric


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_an_owner_sets_and_removes_a_service_default_from_the_page(owner, make_rubric, team):
    rubric = make_rubric(name="<b>Support</b>")
    client = signed_in(owner)
    assert 'href="/team/otel/"' in client.get("/team/").content.decode()

    response = client.post(
        "/team/otel/save/", {"service_name": "support-agent", "rubric": rubric.slug}
    )
    assert response.status_code == 302
    page = client.get("/team/otel/").content.decode()
    assert (
        "support-agent" in page
        and "&lt;b&gt;Support&lt;/b&gt;" in page
        and "<b>Support" not in page
    )
    assert OtelServiceRubric.objects.get(team=team).rubric == rubric

    client.post("/team/otel/remove/", {"service_name": "support-agent"})
    assert not OtelServiceRubric.objects.exists()


def test_an_unknown_rubric_is_shown_next_to_its_field(owner):
    response = signed_in(owner).post("/team/otel/save/", {"service_name": "s", "rubric": "nope"})
    assert response.status_code == 422
    assert "no rubric &#x27;nope&#x27; in this team" in response.content.decode()
    assert not OtelServiceRubric.objects.exists()


def test_editors_read_but_cannot_change_and_other_teams_rubrics_are_not_found(
    owner, teammate, stranger, make_rubric, other_team
):
    theirs = make_rubric(name="Globex only", team=other_team)
    editor = signed_in(teammate)
    assert editor.get("/team/otel/").status_code == 200
    assert editor.post("/team/otel/save/", {"service_name": "s", "rubric": "x"}).status_code == 403
    mine = signed_in(owner).post(
        "/team/otel/save/", {"service_name": "s", "rubric": str(theirs.id)}
    )
    assert mine.status_code == 422
    elsewhere = signed_in(stranger).post(
        "/team/otel/save/", {"service_name": "s", "rubric": theirs.slug}
    )
    assert elsewhere.status_code == 302
    assert OtelServiceRubric.objects.get().team == other_team
