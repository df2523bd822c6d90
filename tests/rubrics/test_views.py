"""Rubric pages: list, create with paste import, the criteria draft editor, settings, history
and diff, access rules, CSRF and escaping."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from rubrics.models import Criterion, Rubric, RubricVersion
from rubrics.services import rubric_set_criteria
from tests.page_helpers import XSS, judged_run, queries_for, signed_in

pytestmark = pytest.mark.django_db


def draft_post(rubric: Rubric, rows: list[tuple[str, str, bool]], op: str, **extra: str) -> dict:
    """The editor form as the browser posts it: management form, rows, the pressed button."""
    data = {
        "c-TOTAL_FORMS": str(len(rows)),
        "c-INITIAL_FORMS": str(len(rows)),
        "c-MIN_NUM_FORMS": "0",
        "c-MAX_NUM_FORMS": "200",
        "op": op,
        **extra,
    }
    for i, (key, description, required) in enumerate(rows):
        data[f"c-{i}-key"] = key
        data[f"c-{i}-description"] = description
        if required:
            data[f"c-{i}-required"] = "on"
    return data


def current_rows(rubric: Rubric) -> list[tuple[str, str, bool]]:
    rubric.refresh_from_db()
    return [
        (c.key, c.description, c.required)
        for c in Criterion.objects.filter(version=rubric.current_version).order_by("position")
    ]


# --- List and create -----------------------------------------------------------------------------


def test_signed_out_visitors_are_sent_to_the_login_page(client):
    response = client.get(reverse("rubric_list"))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_the_login_page_renders_a_form_with_csrf(client):
    response = client.get(reverse("login"))
    assert response.status_code == 200
    assert (
        b'name="csrfmiddlewaretoken"' in response.content and b'name="password"' in response.content
    )


def test_the_rubric_list_shows_each_rubric_with_its_current_version(owner, make_rubric):
    make_rubric(name="Support quality")
    second = make_rubric(name="Tone", criteria="- Polite\n- Short")
    rubric_set_criteria(rubric=second, criteria="- Polite\n- Short\n- Signs off")

    page = signed_in(owner).get(reverse("rubric_list")).content.decode()

    assert "Support quality" in page and "Tone" in page
    assert "v2" in page and "v1" in page


def test_the_rubric_list_runs_the_same_queries_for_two_or_twelve_rubrics(
    owner, make_rubric, make_run
):
    client = signed_in(owner)
    for i in range(2):
        make_run(rubric=make_rubric(name=f"R{i}").slug)
    small = queries_for(client, reverse("rubric_list"))
    for i in range(2, 12):
        make_run(rubric=make_rubric(name=f"R{i}").slug)

    assert queries_for(client, reverse("rubric_list")) == small


def test_the_rubric_list_counts_pass_rates_from_the_rollups_with_the_same_queries_for_more_runs(
    owner, make_rubric, make_run, fake_judge
):
    rubric = make_rubric()
    client = signed_in(owner)
    judged_run(make_run, rubric=rubric.slug)  # passes
    small = queries_for(client, reverse("rubric_list"))
    for i in range(5):
        judged_run(make_run, rubric=rubric.slug, output=f"No answer {i}")  # fails

    assert queries_for(client, reverse("rubric_list")) == small
    row = client.get(reverse("rubric_list")).context["rows"][0]
    assert (row.judged, row.passed, row.last_run_at is not None) == (6, 1, True)


def test_the_paste_preview_shows_parsed_criteria_with_optional_tags_and_saves_nothing(owner):
    text = (
        '# Checklist\n- Greets the customer\n1. [optional] Offers a discount\n\n* Mentions "refund"'
    )

    response = signed_in(owner).post(
        reverse("rubric_new"), {"name": "Support", "criteria_text": text, "op": "preview"}
    )

    page = response.content.decode()
    assert response.status_code == 200
    assert "Greets the customer" in page and "Offers a discount" in page
    assert page.count("badge-optional") == 1 and "Checklist" not in page.split("Parsed criteria")[1]
    assert not Rubric.objects.exists()


def test_creating_a_rubric_from_pasted_text_makes_version_one(owner, team):
    response = signed_in(owner).post(
        reverse("rubric_new"),
        {"name": "Support", "criteria_text": "- Greets\n- [optional] Thanks", "op": "create"},
    )

    rubric = Rubric.objects.get(team=team)
    assert response.status_code == 302 and response["Location"] == reverse(
        "rubric_detail", args=[rubric.id]
    )
    assert current_rows(rubric) == [("c1", "Greets", True), ("c2", "Thanks", False)]


def test_creating_a_rubric_without_a_name_names_the_field(owner):
    response = signed_in(owner).post(reverse("rubric_new"), {"name": "", "op": "create"})

    assert response.status_code == 200
    assert response.context["form"].errors["name"]


def test_an_htmx_preview_answers_with_the_preview_partial_only(owner):
    response = signed_in(owner).post(
        reverse("rubric_new"),
        {"name": "x", "criteria_text": "- A", "op": "preview"},
        HTTP_HX_REQUEST="true",
    )

    page = response.content.decode()
    assert page.lstrip().startswith('<div class="card" id="import-preview"') and "<html" not in page


# --- The draft editor ------------------------------------------------------------------------------


def test_adding_moving_and_deleting_rows_changes_the_draft_but_not_the_rubric(owner, make_rubric):
    rubric = make_rubric()
    client = signed_in(owner)
    url = reverse("rubric_criteria", args=[rubric.id])
    rows = current_rows(rubric)

    added = client.post(url, draft_post(rubric, rows, "add"))
    moved = client.post(url, draft_post(rubric, rows, "down-0"))
    deleted = client.post(url, draft_post(rubric, rows, "delete-1"))

    assert len(added.context["formset"].forms) == 4
    assert [f.initial["key"] for f in moved.context["formset"].forms] == ["c2", "c1", "c3"]
    assert [f.initial["key"] for f in deleted.context["formset"].forms] == ["c1", "c3"]
    assert deleted.context["dirty"] is True
    assert RubricVersion.objects.filter(rubric=rubric).count() == 1


def test_accepting_a_paste_appends_its_criteria_to_the_draft(owner, make_rubric):
    rubric = make_rubric()
    url = reverse("rubric_criteria", args=[rubric.id])
    data = draft_post(
        rubric, current_rows(rubric), "import-append", import_text="- New one\n- [optional] Other"
    )

    response = signed_in(owner).post(url, data)

    rows = [
        (f.initial["description"], f.initial["required"]) for f in response.context["formset"].forms
    ]
    assert rows[-2:] == [("New one", True), ("Other", False)] and len(rows) == 5


def test_saving_an_edited_criterion_creates_version_two_and_links_its_diff(owner, make_rubric):
    rubric = make_rubric()
    rows = current_rows(rubric)
    rows[0] = ("c1", 'Mentions "refund" politely', True)
    rows[2] = ("c3", rows[2][1], True)

    response = signed_in(owner).post(
        reverse("rubric_criteria", args=[rubric.id]),
        draft_post(rubric, rows, "save", note="reworded c1"),
    )

    rubric.refresh_from_db()
    assert rubric.current_version.number == 2 and rubric.current_version.note == "reworded c1"
    assert response.status_code == 302 and "a=1&b=2" in response["Location"]
    assert current_rows(rubric)[0] == ("c1", 'Mentions "refund" politely', True)


def test_saving_over_htmx_tells_the_browser_to_load_the_page(owner, make_rubric):
    rubric = make_rubric()
    rows = current_rows(rubric) + [("", "Brand new", False)]

    response = signed_in(owner).post(
        reverse("rubric_criteria", args=[rubric.id]),
        draft_post(rubric, rows, "save"),
        HTTP_HX_REQUEST="true",
    )

    assert response.status_code == 200 and response["HX-Redirect"].startswith(
        reverse("rubric_detail", args=[rubric.id])
    )
    assert current_rows(rubric)[-1] == ("c4", "Brand new", False)


def test_saving_an_unchanged_draft_creates_no_version(owner, make_rubric):
    rubric = make_rubric()

    signed_in(owner).post(
        reverse("rubric_criteria", args=[rubric.id]),
        draft_post(rubric, current_rows(rubric), "save"),
    )

    assert RubricVersion.objects.filter(rubric=rubric).count() == 1


def test_saving_an_empty_draft_shows_the_error_and_keeps_the_rubric(owner, make_rubric):
    rubric = make_rubric()

    response = signed_in(owner).post(
        reverse("rubric_criteria", args=[rubric.id]), draft_post(rubric, [], "save")
    )

    assert response.status_code == 200 and "at least one criterion" in response.content.decode()
    assert RubricVersion.objects.filter(rubric=rubric).count() == 1


def test_the_diff_names_added_removed_reworded_and_flag_changes(owner, make_rubric):
    rubric = make_rubric(criteria="- Alpha\n- Beta\n- Gamma")
    rubric_set_criteria(
        rubric=rubric,
        criteria=[
            {"key": "c1", "description": "Alpha changed", "required": True},
            {"key": "c2", "description": "Beta", "required": False},
            {"description": "Delta", "required": True},
        ],
    )

    response = signed_in(owner).get(reverse("rubric_detail", args=[rubric.id]), {"a": 1, "b": 2})

    kinds = {e.key: e.kind for e in response.context["diff_changes"]}
    assert kinds == {"c1": "reworded", "c2": "required_changed", "c3": "removed", "c4": "added"}
    page = response.content.decode()
    assert "<ins>changed</ins>" in page and "required → optional" in page


def test_an_htmx_diff_request_answers_with_the_diff_partial(owner, make_rubric):
    rubric = make_rubric(criteria="- Alpha")
    rubric_set_criteria(rubric=rubric, criteria="- Alpha\n- Beta")

    response = signed_in(owner).get(
        reverse("rubric_detail", args=[rubric.id]), {"a": 1, "b": 2}, HTTP_HX_REQUEST="true"
    )

    page = response.content.decode()
    assert page.lstrip().startswith('<div class="card" id="diff"') and "Beta" in page


def test_the_history_counts_the_runs_judged_on_each_version(
    owner, make_rubric, make_run, fake_judge
):
    from tests.page_helpers import judge_pending

    rubric = make_rubric()
    for _ in range(2):
        judge_pending(make_run(rubric=rubric.slug))
    rubric_set_criteria(rubric=rubric, criteria="- Only one")
    judge_pending(make_run(rubric=rubric.slug))

    response = signed_in(owner).get(reverse("rubric_detail", args=[rubric.id]))

    assert {row.version.number: row.runs_judged for row in response.context["versions"]} == {
        2: 1,
        1: 2,
    }


def test_the_editor_runs_the_same_queries_for_two_or_ten_versions(owner, make_rubric):
    rubric = make_rubric(criteria="- A")
    client = signed_in(owner)
    rubric_set_criteria(rubric=rubric, criteria="- A\n- B")
    small = queries_for(client, reverse("rubric_detail", args=[rubric.id]))
    for n in range(8):
        rubric_set_criteria(
            rubric=rubric, criteria="- A\n- B\n" + "\n".join(f"- X{i}" for i in range(n + 1))
        )

    assert queries_for(client, reverse("rubric_detail", args=[rubric.id])) == small


# --- Settings ------------------------------------------------------------------------------------


def settings_post(**overrides: str) -> dict:
    data = {
        "name": "Support quality",
        "description": "",
        "judge_model": "",
        "scale": "1",
        "strategy": "batched",
        "alignment_mode": "both",
        "user_share": "0.7",
        **{
            f"w_user_{d}": v
            for d, v in zip(
                ("intent", "requirements", "completeness", "appropriateness"),
                ("0.4", "0.3", "0.2", "0.1"),
                strict=True,
            )
        },
        **{
            f"w_system_{d}": v
            for d, v in zip(
                ("intent", "requirements", "completeness", "appropriateness"),
                ("0.35", "0.35", "0.15", "0.15"),
                strict=True,
            )
        },
    }
    data.update(overrides)
    return data


def test_saving_judge_settings_updates_the_rubric(owner, make_rubric, fake_judge):
    rubric = make_rubric()

    response = signed_in(owner).post(
        reverse("rubric_settings", args=[rubric.id]),
        settings_post(
            judge_model="openai/gpt-4o-mini", temperature="0.2", scale="10", strategy="independent"
        ),
    )

    rubric.refresh_from_db()
    assert response.status_code == 302
    assert (
        rubric.judge_model,
        rubric.judge_params,
        rubric.scale,
        rubric.strategy,
        rubric.alignment_mode,
    ) == ("openai/gpt-4o-mini", {"temperature": 0.2}, 10.0, "independent", "both")


def test_an_out_of_range_temperature_is_reported_next_to_its_field(owner, make_rubric):
    rubric = make_rubric()

    response = signed_in(owner).post(
        reverse("rubric_settings", args=[rubric.id]), settings_post(temperature="5")
    )

    assert response.status_code == 200
    assert response.context["settings_form"].errors["temperature"]
    rubric.refresh_from_db()
    assert rubric.judge_params == {}


def test_weights_that_do_not_sum_to_one_are_reported_on_their_perspective(owner, make_rubric):
    rubric = make_rubric()

    response = signed_in(owner).post(
        reverse("rubric_settings", args=[rubric.id]),
        settings_post(custom_weights="on", w_user_intent="0.9"),
        HTTP_HX_REQUEST="true",
    )

    form = response.context["settings_form"]
    assert "sum to 1" in " ".join(form.group_errors.get("user", []))
    assert 'id="settings-form"' in response.content.decode()[:200]
    rubric.refresh_from_db()
    assert rubric.alignment_weights is None


def test_custom_weights_are_saved_when_they_are_valid(owner, make_rubric):
    rubric = make_rubric()

    signed_in(owner).post(
        reverse("rubric_settings", args=[rubric.id]),
        settings_post(
            custom_weights="on", w_user_intent="0.5", w_user_appropriateness="0.0", user_share="0.6"
        ),
    )

    rubric.refresh_from_db()
    assert (
        rubric.alignment_weights["user"]["intent"] == 0.5
        and rubric.alignment_weights["user_share"] == 0.6
    )


# --- Access, CSRF and escaping -------------------------------------------------------------------


def test_a_viewer_reads_the_editor_without_any_edit_control(viewer, make_rubric):
    rubric = make_rubric()

    page = signed_in(viewer).get(reverse("rubric_detail", args=[rubric.id])).content.decode()

    assert "Mentions" in page and "Read only" in page
    for control in ("Save as version", "Save settings", "Try edits", "+ Add criterion", "Re-score"):
        assert control not in page


@pytest.mark.parametrize("name", ["rubric_criteria", "rubric_settings", "rubric_try"])
def test_a_viewer_cannot_post_to_the_editor(viewer, make_rubric, name):
    rubric = make_rubric()

    response = signed_in(viewer).post(
        reverse(name, args=[rubric.id]), draft_post(rubric, current_rows(rubric), "save")
    )

    assert response.status_code == 403
    assert RubricVersion.objects.filter(rubric=rubric).count() == 1


def test_a_viewer_cannot_create_a_rubric(viewer):
    response = signed_in(viewer).post(reverse("rubric_new"), {"name": "x", "op": "create"})
    assert response.status_code == 403 and not Rubric.objects.exists()


@pytest.mark.parametrize("name", ["rubric_detail"])
def test_another_teams_rubric_page_is_not_found(stranger, make_rubric, name):
    rubric = make_rubric()
    assert signed_in(stranger).get(reverse(name, args=[rubric.id])).status_code == 404


@pytest.mark.parametrize("name", ["rubric_criteria", "rubric_settings", "rubric_try"])
def test_posting_to_another_teams_rubric_is_not_found_and_changes_nothing(
    stranger, make_rubric, name
):
    rubric = make_rubric()

    response = signed_in(stranger).post(
        reverse(name, args=[rubric.id]), draft_post(rubric, [("", "Hijack", True)], "save")
    )

    assert response.status_code == 404
    assert RubricVersion.objects.filter(rubric=rubric).count() == 1


def test_editor_posts_without_a_csrf_token_are_refused(owner, make_rubric):
    rubric = make_rubric()
    client = signed_in(owner, enforce_csrf_checks=True)
    rows = current_rows(rubric) + [("", "Sneaky", True)]

    refused = client.post(
        reverse("rubric_criteria", args=[rubric.id]), draft_post(rubric, rows, "save")
    )
    client.get(reverse("rubric_detail", args=[rubric.id]))
    token = client.cookies["csrftoken"].value
    accepted = client.post(
        reverse("rubric_criteria", args=[rubric.id]),
        draft_post(rubric, rows, "save"),
        HTTP_X_CSRFTOKEN=token,
    )

    assert refused.status_code == 403 and accepted.status_code == 302
    assert RubricVersion.objects.filter(rubric=rubric).count() == 2


def test_the_page_carries_the_csrf_token_for_htmx_on_the_body(owner, make_rubric):
    rubric = make_rubric()
    page = signed_in(owner).get(reverse("rubric_detail", args=[rubric.id])).content.decode()
    assert '<body hx-headers=\'{"X-CSRFToken": "' in page


def test_a_criterion_with_a_script_tag_shows_as_text_in_the_editor_and_list(owner, make_rubric):
    rubric = make_rubric(
        name=f"Evil {XSS}", criteria=[{"description": f"Says {XSS}", "required": True}]
    )
    client = signed_in(owner)

    editor = client.get(reverse("rubric_detail", args=[rubric.id])).content.decode()
    listing = client.get(reverse("rubric_list")).content.decode()

    for page in (editor, listing):
        assert XSS not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_a_request_for_a_missing_rubric_is_not_found(owner):
    import uuid

    assert signed_in(owner).get(reverse("rubric_detail", args=[uuid.uuid4()])).status_code == 404


def test_plain_clients_without_a_session_get_no_editor(make_rubric):
    rubric = make_rubric()
    response = Client().post(reverse("rubric_criteria", args=[rubric.id]), {})
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
