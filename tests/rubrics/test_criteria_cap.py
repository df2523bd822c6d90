"""Bounded work per request: at most EVALSITE_MAX_CRITERIA criteria on every path that writes
or previews them (service, API, editor, paste preview, inline criteria of a run), with an error
naming the field and the limit; fresh keys in linear time."""

from __future__ import annotations

import pytest
from django.urls import reverse

from judge_engine.text import count_criteria, parse_criteria
from rubrics.models import Criterion, Rubric, RubricVersion
from rubrics.services import RubricValidationError, rubric_create, rubric_set_criteria
from runs.models import AgentRun
from tests.api_client import Api, field_locs
from tests.conftest import run_payload
from tests.page_helpers import signed_in
from tests.rubrics.test_views import current_rows, draft_post

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(api_key) -> Api:
    return Api(api_key)


def many(n: int, word: str = "Criterion") -> list[dict]:
    return [{"description": f"{word} {i}", "required": i % 2 == 0} for i in range(n)]


def lines(n: int, word: str = "Criterion") -> str:
    return "\n".join(f"- {word} {i}" for i in range(n))


def keys_of(version: RubricVersion) -> list[str]:
    return list(version.criteria.order_by("position").values_list("key", flat=True))


# --- The service ---------------------------------------------------------------------------------


def test_a_rubric_may_hold_exactly_the_default_cap_of_200_criteria(team, settings):
    assert settings.EVALSITE_MAX_CRITERIA == 200

    rubric = rubric_create(team=team, name="Big", criteria=many(200))

    assert keys_of(rubric.current_version) == [f"c{i}" for i in range(1, 201)]


def test_replacing_200_criteria_keeps_matching_keys_and_numbers_new_ones_after_all_old(team):
    rubric = rubric_create(team=team, name="Big", criteria=many(200))

    # Half the texts survive (keys kept), half are new: fresh keys continue after c200.
    version, created = rubric_set_criteria(
        rubric=rubric, criteria=many(100) + many(100, word="Reworded")
    )

    assert created
    assert keys_of(version) == [f"c{i}" for i in range(1, 101)] + [f"c{i}" for i in range(201, 301)]


def test_one_criterion_over_the_cap_is_refused_naming_the_limit(team):
    with pytest.raises(RubricValidationError) as caught:
        rubric_create(team=team, name="Too big", criteria=many(201))

    assert caught.value.errors == {"criteria": "at most 200 criteria (got 201)"}
    assert not Rubric.objects.exists()


def test_text_criteria_are_counted_after_parsing_so_blank_lines_and_headings_are_free(team):
    text = "# Heading\n\n" + "\n\n".join(f"- Criterion {i}" for i in range(200))
    rubric = rubric_create(team=team, name="Spaced", criteria=text)
    assert rubric.current_version.criteria.count() == 200

    with pytest.raises(RubricValidationError) as caught:
        rubric_set_criteria(rubric=rubric, criteria=lines(8000))

    assert caught.value.errors == {"criteria": "at most 200 criteria (got 8,000)"}
    assert RubricVersion.objects.filter(rubric=rubric).count() == 1


def test_the_cap_comes_from_the_setting(team, settings):
    settings.EVALSITE_MAX_CRITERIA = 3
    rubric = rubric_create(team=team, name="Small", criteria=many(3))

    with pytest.raises(RubricValidationError, match=r"at most 3 criteria \(got 4\)"):
        rubric_set_criteria(rubric=rubric, criteria=many(4))


def test_a_fresh_key_never_reuses_a_key_of_an_older_version_or_an_explicit_one(team):
    rubric = rubric_create(team=team, name="Keys", criteria="- A\n- B\n- C")
    rubric_set_criteria(rubric=rubric, criteria="- A")  # c2 and c3 now live only in v1

    version, _ = rubric_set_criteria(
        rubric=rubric,
        criteria=[
            {"description": "A"},
            {"description": "New"},
            {"key": "c9", "description": "Explicit"},
            {"description": "Newer"},
        ],
    )

    assert keys_of(version) == ["c1", "c10", "c9", "c11"]
    assert len(set(Criterion.objects.filter(version=version).values_list("key"))) == 4


def test_an_over_long_description_in_text_is_refused_like_one_in_a_list(team):
    with pytest.raises(RubricValidationError) as caught:
        rubric_create(team=team, name="Long", criteria="- ok\n- " + "x" * 5001)

    assert caught.value.errors == {
        "criteria": "Criterion on line 2 is 5,001 characters; the limit is 5,000."
    }


# --- The API -------------------------------------------------------------------------------------


def test_creating_a_rubric_over_the_cap_through_the_api_is_a_422_on_criteria(api):
    response = api.post("/rubrics", {"name": "Big", "criteria": many(201)})

    assert field_locs(response) == [["body", "payload", "criteria"]]
    assert response.json()["detail"][0]["msg"] == "at most 200 criteria (got 201)"
    assert not Rubric.objects.exists()


def test_put_criteria_takes_the_cap_and_refuses_8000_lines(api, make_rubric):
    rubric = make_rubric()

    ok = api.put(f"/rubrics/{rubric.slug}/criteria", {"criteria": many(200)})
    too_many = api.put(f"/rubrics/{rubric.slug}/criteria", {"criteria": lines(8000)})

    assert ok.status_code == 201, ok.content
    assert len(ok.json()["criteria"]) == 200
    assert field_locs(too_many) == [["body", "payload", "criteria"]]
    assert "at most 200 criteria (got 8,000)" in too_many.json()["detail"][0]["msg"]


def test_inline_criteria_of_api_score_are_capped_too(api):
    response = api.post("/score", run_payload(criteria=many(201), timeout=1))

    assert field_locs(response) == [["body", "payload", "criteria"]]
    assert not AgentRun.objects.exists()


def test_criteria_a_run_carries_in_its_request_context_are_capped_and_checked(api):
    over = api.post("/runs", run_payload(request_context={"rubric": lines(201)}))
    invalid = api.post("/runs", run_payload(metadata={"rubric": [1, 2]}))
    long = api.post("/runs", run_payload(input={"messages": [], "rubric": "- " + "x" * 5001}))

    assert field_locs(over) == [["body", "payload", "request_context", "rubric"]]
    assert "at most 200 criteria (got 201)" in over.json()["detail"][0]["msg"]
    assert field_locs(invalid) == [["body", "payload", "metadata", "rubric"]]
    assert field_locs(long) == [["body", "payload", "input", "rubric", 0, "description"]]
    assert not AgentRun.objects.exists()


def test_a_bulk_item_over_the_cap_is_an_item_error(api):
    runs = [run_payload(external_id="ok"), run_payload(request_context={"rubric": lines(201)})]
    response = api.post("/runs/bulk", {"runs": runs})

    assert response.status_code == 422
    errors = response.json()["extra"]["errors"]
    assert [(e["index"], e["field"]) for e in errors] == [(1, "request_context.rubric")]


# --- The editor pages ----------------------------------------------------------------------------


def test_the_paste_preview_of_a_new_rubric_refuses_more_than_the_cap(owner, settings):
    settings.EVALSITE_MAX_CRITERIA = 5
    url = reverse("rubric_new")

    preview = signed_in(owner).post(url, {"name": "x", "criteria_text": lines(6), "op": "preview"})
    create = signed_in(owner).post(url, {"name": "x", "criteria_text": lines(6), "op": "create"})

    assert "at most 5 criteria (got 6)" in preview.content.decode()
    assert preview.context["parsed"] is None
    assert "at most 5 criteria (got 6)" in create.content.decode()
    assert not Rubric.objects.exists()


def test_the_editor_paste_box_refuses_a_paste_or_an_append_past_the_cap(
    owner, make_rubric, settings
):
    settings.EVALSITE_MAX_CRITERIA = 5
    rubric = make_rubric()  # three criteria
    url = reverse("rubric_criteria", args=[rubric.id])
    rows = current_rows(rubric)

    preview = signed_in(owner).post(url, draft_post(rubric, rows, "preview", import_text=lines(6)))
    append = signed_in(owner).post(
        url, draft_post(rubric, rows, "import-append", import_text=lines(3))
    )

    assert "at most 5 criteria (got 6)" in preview.content.decode()
    assert preview.context["parsed"] is None
    assert "at most 5 criteria (got 6)" in append.content.decode()
    assert len(append.context["formset"].forms) == 3  # the draft is unchanged


def test_saving_a_draft_one_row_over_the_cap_names_the_limit_and_saves_nothing(
    owner, make_rubric, settings
):
    settings.EVALSITE_MAX_CRITERIA = 5
    rubric = make_rubric()
    rows = [("", f"Row {i}", True) for i in range(6)]

    response = signed_in(owner).post(
        reverse("rubric_criteria", args=[rubric.id]), draft_post(rubric, rows, "save")
    )

    assert "at most 5 criteria (got 6)" in response.content.decode()
    assert RubricVersion.objects.filter(rubric=rubric).count() == 1


def test_a_draft_claiming_thousands_of_rows_reads_no_more_than_the_cap_plus_one(
    owner, make_rubric, settings
):
    settings.EVALSITE_MAX_CRITERIA = 5
    rubric = make_rubric()
    data = draft_post(rubric, [("", f"Row {i}", True) for i in range(6)], "save")
    data["c-TOTAL_FORMS"] = "100000"

    response = signed_in(owner).post(reverse("rubric_criteria", args=[rubric.id]), data)

    assert response.status_code == 200
    assert "at most 5" in response.content.decode()
    assert RubricVersion.objects.filter(rubric=rubric).count() == 1


@pytest.mark.parametrize(
    "text",
    [
        "",
        "- A\n\n# Heading\n-\n- [ ]\n1. B\n[optional] C\n  * D  \n## \n(required)\n- [x] E",
        "\n".join(f"{i}) item" for i in range(300)),
    ],
)
def test_the_cheap_count_agrees_with_the_parser(text):
    assert count_criteria(text) == len(parse_criteria(text))
