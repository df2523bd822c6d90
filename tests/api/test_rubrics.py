"""/api/rubrics: authoring rubrics and their versions."""

from __future__ import annotations

import pytest

from rubrics.models import Rubric, RubricVersion
from tests.api_client import assert_error, field_locs
from tests.conftest import SUPPORT_CRITERIA, run_payload


def test_creating_a_rubric_with_a_list_of_criteria_starts_at_version_1(api):
    response = api.post(
        "/rubrics", {"name": "Support quality", "criteria": SUPPORT_CRITERIA, "scale": 10}
    )

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["slug"] == "support-quality" and body["scale"] == 10
    version = body["current_version"]
    assert version["number"] == 1
    assert [(c["criterion_id"], c["required"]) for c in version["criteria"]] == [
        ("c1", True),
        ("c2", True),
        ("c3", False),
    ]


def test_criteria_may_be_given_as_text_with_optional_tags(api):
    text = '# Support\n- Mentions "refund"\n- [optional] Says "thanks"\n\n1. Is polite'
    response = api.post("/rubrics", {"name": "Text", "criteria": text})

    assert response.status_code == 201, response.content
    criteria = response.json()["current_version"]["criteria"]
    assert [(c["description"], c["required"]) for c in criteria] == [
        ('Mentions "refund"', True),
        ('Says "thanks"', False),
        ("Is polite", True),
    ]


def test_a_rubric_without_criteria_has_no_version_yet(api):
    response = api.post("/rubrics", {"name": "Empty"})
    assert response.status_code == 201
    assert response.json()["current_version"] is None


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({}, ["body", "payload", "name"]),
        ({"name": "X", "colour": "red"}, ["body", "payload", "colour"]),
        ({"name": "X", "strategy": "sometimes"}, ["body", "payload", "strategy"]),
        ({"name": "X", "scale": -1}, ["body", "payload", "scale"]),
        ({"name": "X", "criteria": [{"description": ""}]}, ["body", "payload", "criteria"]),
        ({"name": "X", "judge_params": {"temperature": 9}}, ["body", "payload", "judge_params"]),
    ],
)
def test_invalid_rubric_input_is_a_422_naming_the_field(api, body, loc):
    locs = field_locs(api.post("/rubrics", body))
    assert any(found[: len(loc)] == loc for found in locs), locs


def test_service_validation_errors_use_the_same_422_shape(api, make_rubric):
    make_rubric()
    locs = field_locs(api.post("/rubrics", {"name": "Copy", "slug": "support-quality"}))
    assert ["body", "payload", "slug"] in locs
    locs = field_locs(api.post("/rubrics", {"name": "   "}))
    assert ["body", "payload", "name"] in locs
    locs = field_locs(
        api.post("/rubrics", {"name": "W", "alignment_weights": {"user": {"intent": 2}}})
    )
    assert ["body", "payload", "alignment_weights"] in locs


def test_a_rubric_is_found_by_id_or_by_slug(api, make_rubric):
    rubric = make_rubric()
    by_id = api.get(f"/rubrics/{rubric.id}").json()
    by_slug = api.get(f"/rubrics/{rubric.slug}").json()
    assert by_id == by_slug and by_id["id"] == str(rubric.id)


def test_an_unknown_or_foreign_rubric_is_a_404(api, make_rubric, other_team):
    foreign = make_rubric(team=other_team, name="Their rubric")
    assert_error(api.get("/rubrics/nope"), 404)
    assert_error(api.get(f"/rubrics/{foreign.id}"), 404)
    assert_error(api.patch(f"/rubrics/{foreign.id}", {"name": "Mine now"}), 404)
    assert_error(api.post(f"/rubrics/{foreign.id}/archive"), 404)
    assert_error(api.put(f"/rubrics/{foreign.id}/criteria", {"criteria": "- x"}), 404)
    assert_error(api.get(f"/rubrics/{foreign.id}/versions"), 404)
    assert_error(api.get(f"/rubrics/{foreign.id}/versions/1"), 404)
    foreign.refresh_from_db()
    assert foreign.name == "Their rubric" and foreign.archived_at is None


def test_patch_changes_only_the_fields_sent(api, make_rubric, fake_judge):
    rubric = make_rubric(judge_model="openai/gpt-4o-mini")
    response = api.patch(f"/rubrics/{rubric.slug}", {"name": "Renamed", "scale": 5})

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["name"], body["scale"], body["judge_model"]) == (
        "Renamed",
        5,
        "openai/gpt-4o-mini",
    )
    assert body["current_version"]["number"] == 1


def test_patch_rejects_null_for_required_fields_and_unknown_fields(api, make_rubric):
    rubric = make_rubric()
    assert ["body", "payload", "name"] in field_locs(
        api.patch(f"/rubrics/{rubric.slug}", {"name": None})
    )
    assert ["body", "payload", "criteria"] in field_locs(
        api.patch(f"/rubrics/{rubric.slug}", {"criteria": "- x"})
    )


def test_archiving_hides_a_rubric_from_the_list_and_from_new_runs(api, make_rubric):
    rubric = make_rubric()
    response = api.post(f"/rubrics/{rubric.slug}/archive")

    assert response.status_code == 200 and response.json()["archived_at"]
    assert api.get("/rubrics").json()["items"] == []
    assert len(api.get("/rubrics", include_archived="true").json()["items"]) == 1
    assert ["body", "payload", "rubric"] in field_locs(
        api.post("/runs", run_payload(rubric=rubric.slug))
    )


def test_putting_new_criteria_creates_a_version_and_keeps_keys_of_unchanged_ones(api, make_rubric):
    rubric = make_rubric()
    criteria = [
        {"description": 'Mentions "refund"'},
        {"description": 'Says "sorry"', "required": False},
    ]
    response = api.put(f"/rubrics/{rubric.slug}/criteria", {"criteria": criteria, "note": "tone"})

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["number"] == 2 and body["note"] == "tone"
    assert [c["criterion_id"] for c in body["criteria"]] == ["c1", "c4"]
    assert api.get(f"/rubrics/{rubric.slug}").json()["current_version"]["number"] == 2


def test_putting_the_same_criteria_again_returns_the_current_version_with_200(api, make_rubric):
    rubric = make_rubric()
    response = api.put(f"/rubrics/{rubric.slug}/criteria", {"criteria": SUPPORT_CRITERIA})

    assert response.status_code == 200, response.content
    assert response.json()["number"] == 1
    assert RubricVersion.objects.filter(rubric=rubric).count() == 1


def test_rewording_with_an_explicit_criterion_id_keeps_the_key(api, make_rubric):
    rubric = make_rubric()
    criteria = [
        {"criterion_id": "c1", "description": 'Mentions the "refund" clearly'},
        {"criterion_id": "c2", "description": 'Gives the "order number"'},
    ]
    body = api.put(f"/rubrics/{rubric.slug}/criteria", {"criteria": criteria}).json()
    assert [c["criterion_id"] for c in body["criteria"]] == ["c1", "c2"]


def test_empty_criteria_are_a_422(api, make_rubric):
    rubric = make_rubric()
    for empty in ([], "\n# only a heading\n"):
        response = api.put(f"/rubrics/{rubric.slug}/criteria", {"criteria": empty})
        assert ["body", "payload", "criteria"] in field_locs(response)


def test_versions_are_listed_newest_first_and_paginated(api, make_rubric):
    rubric = make_rubric()
    for i in range(3):
        api.put(f"/rubrics/{rubric.slug}/criteria", {"criteria": f"- Criterion {i}"})

    first = api.get(f"/rubrics/{rubric.slug}/versions", limit=3).json()
    second = api.get(
        f"/rubrics/{rubric.slug}/versions", limit=3, cursor=first["next_cursor"]
    ).json()

    assert [v["number"] for v in first["items"]] == [4, 3, 2]
    assert [v["number"] for v in second["items"]] == [1] and second["next_cursor"] is None
    one = api.get(f"/rubrics/{rubric.slug}/versions/1").json()
    assert [c["criterion_id"] for c in one["criteria"]] == ["c1", "c2", "c3"]
    assert_error(api.get(f"/rubrics/{rubric.slug}/versions/9"), 404)


def test_the_rubric_list_is_paginated_and_capped(api, make_rubric, settings):
    settings.EVALSITE_PAGE_SIZE_MAX = 2
    for name in ("Alpha", "Beta", "Gamma"):
        make_rubric(name=name)

    first = api.get("/rubrics", limit=1000).json()
    second = api.get("/rubrics", limit=1000, cursor=first["next_cursor"]).json()

    assert [r["name"] for r in first["items"]] == ["Alpha", "Beta"]
    assert [r["name"] for r in second["items"]] == ["Gamma"] and second["next_cursor"] is None


def test_a_cursor_we_did_not_issue_is_a_422_naming_the_cursor(api):
    assert ["query", "cursor"] in field_locs(api.get("/rubrics", cursor="garbage!"))


def test_viewers_and_keys_of_other_teams_change_nothing(api, other_api, make_rubric):
    rubric = make_rubric()
    other_api.put(f"/rubrics/{rubric.slug}/criteria", {"criteria": "- hijacked"})
    assert Rubric.objects.get(pk=rubric.pk).current_version.number == 1


def test_judge_limits_above_the_deployment_caps_are_a_422_naming_field_and_cap(
    api, make_rubric, settings
):
    settings.EVALSITE_JUDGE_MAX_TIMEOUT = 90
    settings.EVALSITE_JUDGE_MAX_TOKENS = 4000
    rubric = make_rubric()

    slow = api.patch(f"/rubrics/{rubric.slug}", {"judge_params": {"timeout": 600}})
    long = api.patch(f"/rubrics/{rubric.slug}", {"judge_params": {"max_tokens": 50_000}})
    within = api.patch(f"/rubrics/{rubric.slug}", {"judge_params": {"timeout": 90}})

    assert (slow.status_code, long.status_code, within.status_code) == (422, 422, 200)
    assert field_locs(slow) == [["body", "payload", "judge_params", "timeout"]]
    assert "at most 90 seconds (EVALSITE_JUDGE_MAX_TIMEOUT)" in slow.json()["detail"][0]["msg"]
    assert "at most 4,000 tokens (EVALSITE_JUDGE_MAX_TOKENS)" in long.json()["detail"][0]["msg"]
