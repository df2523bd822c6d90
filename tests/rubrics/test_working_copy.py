"""The rubric editor's unsaved edits (rubrics.working_copy): autosaved per rubric and user,
restored when the editor opens, deleted by saving a version or discarding; scoped to the
caller's own copy of their own team's rubric; held to the limits versions have."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.urls import reverse
from django.utils.html import escape

from judge_engine.text import CRITERION_MAX_CHARS
from rubrics.models import WorkingCopy
from rubrics.services import MAX_INSTRUCTIONS_CHARS, rubric_set_criteria
from rubrics.working_copy import WorkingCopyState, working_copy_save
from tests.page_helpers import XSS, signed_in
from tests.rubrics.test_views import current_rows, draft_post

pytestmark = pytest.mark.django_db


def edited_rows(rubric) -> list[tuple[str, str, bool]]:
    """The version's rows with the first reworded, the last made required and moved first,
    and the second deleted."""
    (k1, d1, r1), _, (k3, d3, _) = current_rows(rubric)
    return [(k3, d3, True), (k1, d1 + " and the date", r1)]


def autosave_post(rubric, rows=None, base: str = "1", revision: str = "", **extra: str) -> dict:
    data = draft_post(rubric, edited_rows(rubric) if rows is None else rows, "", **extra)
    del data["op"]
    return {
        "judge_view": "final",
        "run_token_budget": "24000",
        "instructions": "",
        "note": "",
        "base_version": base,
        "revision": revision,
        **data,
    }


def fresh_revision(client, rubric) -> str:
    """The revision an editor page opened now would send: that of the user's stored copy."""
    user_id = client.session["_auth_user_id"]
    copy = WorkingCopy.objects.filter(rubric=rubric, user_id=user_id).first()
    return str(copy.revision) if copy else ""


def autosave(client, rubric, *, revision: str | None = None, **kwargs):
    """An autosave from an editor page opened just now, unless ``revision`` says what the
    page was rendered from."""
    if revision is None:
        revision = fresh_revision(client, rubric)
    return client.post(
        reverse("rubric_working_copy", args=[rubric.id]),
        autosave_post(rubric, revision=revision, **kwargs),
    )


def editor(client, rubric) -> str:
    response = client.get(reverse("rubric_detail", args=[rubric.id]))
    assert response.status_code == 200
    return response.content.decode()


# --- Autosave and restore -----------------------------------------------------------------------


def test_autosaved_edits_are_kept_for_the_user_and_the_editor_opens_with_them(owner, make_rubric):
    rubric = make_rubric()
    client = signed_in(owner)

    response = autosave(client, rubric, note="Dates matter", instructions="Be strict.")

    assert response.status_code == 200, response.content
    assert response.json()["state"] == "saved"
    assert response.json()["label"].startswith("Unsaved edits saved ")
    copy = WorkingCopy.objects.get(rubric=rubric, user=owner)
    assert copy.base_version == rubric.current_version
    assert [(r["key"], r["description"], r["required"]) for r in copy.state["criteria"]] == (
        edited_rows(rubric)
    )
    page = editor(client, rubric)
    assert "You have unsaved edits from" in page and "(based on version 1)" in page
    assert escape('Mentions "refund" and the date') in page
    assert 'name="c-TOTAL_FORMS" value="2"' in page  # the deleted row stays deleted
    assert page.index(escape('Says "thanks"')) < page.index(escape('Mentions "refund" and the'))
    assert 'value="Dates matter"' in page and ">Be strict.</textarea>" in page
    assert "Discard edits" in page and "Keep editing" in page
    assert rubric.versions.count() == 1


def test_the_editor_reads_back_ones_own_edits_as_json(owner, make_rubric):
    rubric = make_rubric()
    client = signed_in(owner)
    url = reverse("rubric_working_copy", args=[rubric.id])
    assert client.get(url).status_code == 404

    autosave(client, rubric, judge_view="trajectory")

    answer = client.get(url).json()
    assert answer["base_version"] == 1 and answer["edits"]["judge_view"] == "trajectory"
    assert len(answer["edits"]["criteria"]) == 2


def test_edits_that_match_the_current_version_are_not_kept(owner, make_rubric):
    rubric = make_rubric()
    client = signed_in(owner)
    autosave(client, rubric)

    response = autosave(client, rubric, rows=current_rows(rubric) + [("", "   ", True)])

    assert response.json() == {
        "state": "clean",
        "label": "No unsaved edits",
        "revision": None,
        "base_version": 1,
        "save_number": 2,
    }
    assert not WorkingCopy.objects.exists()
    assert "You have unsaved edits" not in editor(client, rubric)


def test_the_notice_says_when_a_newer_version_became_current(owner, teammate, make_rubric):
    rubric = make_rubric()
    client = signed_in(owner)
    autosave(client, rubric)
    rubric_set_criteria(rubric=rubric, criteria="- Something else", user=teammate)

    page = editor(client, rubric)

    assert "(based on version 1; version 2 is now current)" in page
    assert escape('Mentions "refund" and the date') in page


def test_restored_edits_are_escaped(owner, make_rubric):
    rubric = make_rubric()
    client = signed_in(owner)
    autosave(client, rubric, rows=[("", f"Says {XSS}", True)], note=XSS)

    page = editor(client, rubric)

    assert XSS not in page and "Says &lt;script&gt;alert(1)&lt;/script&gt;" in page


# --- Saving a version and discarding -------------------------------------------------------------


def test_saving_a_version_deletes_the_unsaved_edits(owner, make_rubric):
    rubric = make_rubric()
    client = signed_in(owner)
    autosave(client, rubric)

    response = client.post(
        reverse("rubric_criteria", args=[rubric.id]),
        draft_post(rubric, edited_rows(rubric), "save"),
    )

    assert response.status_code == 302
    assert rubric.versions.count() == 2
    assert not WorkingCopy.objects.exists()
    assert "You have unsaved edits" not in editor(client, rubric)


def test_a_refused_save_keeps_the_unsaved_edits(owner, make_rubric):
    rubric = make_rubric()
    client = signed_in(owner)
    autosave(client, rubric)

    response = client.post(
        reverse("rubric_criteria", args=[rubric.id]),
        draft_post(rubric, edited_rows(rubric), "save", run_token_budget="0"),
    )

    assert response.status_code == 200 and rubric.versions.count() == 1
    assert WorkingCopy.objects.filter(rubric=rubric, user=owner).exists()


def test_discarding_deletes_the_edits_and_the_editor_shows_the_saved_version(owner, make_rubric):
    rubric = make_rubric()
    client = signed_in(owner)
    autosave(client, rubric)

    response = client.post(reverse("rubric_working_copy_discard", args=[rubric.id]), follow=True)

    assert response.redirect_chain[-1][0] == reverse("rubric_detail", args=[rubric.id])
    page = response.content.decode()
    assert "Unsaved edits discarded" in page and "You have unsaved edits" not in page
    assert "and the date" not in page and escape('Gives the "order number"') in page
    assert not WorkingCopy.objects.exists()


def test_discarding_over_htmx_has_the_browser_load_the_editor(owner, make_rubric):
    rubric = make_rubric()
    client = signed_in(owner)
    autosave(client, rubric)

    response = client.post(
        reverse("rubric_working_copy_discard", args=[rubric.id]), headers={"HX-Request": "true"}
    )

    assert response["HX-Redirect"] == reverse("rubric_detail", args=[rubric.id])
    assert not WorkingCopy.objects.exists()


# --- Scoping --------------------------------------------------------------------------------------


def test_another_teams_rubric_is_a_404_for_autosave_read_and_discard(stranger, make_rubric):
    rubric = make_rubric()
    client = signed_in(stranger)

    assert autosave(client, rubric).status_code == 404
    assert client.get(reverse("rubric_working_copy", args=[rubric.id])).status_code == 404
    discard = client.post(reverse("rubric_working_copy_discard", args=[rubric.id]))
    assert discard.status_code == 404
    assert not WorkingCopy.objects.exists()


def test_a_teammate_neither_reads_nor_discards_anothers_edits(owner, teammate, make_rubric):
    rubric = make_rubric()
    autosave(signed_in(owner), rubric)
    client = signed_in(teammate)

    assert client.get(reverse("rubric_working_copy", args=[rubric.id])).status_code == 404
    page = editor(client, rubric)
    assert "You have unsaved edits" not in page and "and the date" not in page
    client.post(reverse("rubric_working_copy_discard", args=[rubric.id]))
    assert WorkingCopy.objects.filter(rubric=rubric, user=owner).exists()


def test_each_user_keeps_their_own_copy(owner, teammate, make_rubric):
    rubric = make_rubric()
    autosave(signed_in(owner), rubric)

    autosave(signed_in(teammate), rubric, rows=[("", "Teammate's criterion", True)])

    copies = {c.user: c.state["criteria"][0]["description"] for c in WorkingCopy.objects.all()}
    assert copies == {owner: 'Says "thanks"', teammate: "Teammate's criterion"}


def test_viewers_cannot_autosave(viewer, make_rubric):
    rubric = make_rubric()

    assert autosave(signed_in(viewer), rubric).status_code == 403
    assert not WorkingCopy.objects.exists()


def test_autosave_needs_the_csrf_token(owner, make_rubric):
    rubric = make_rubric()
    client = signed_in(owner, enforce_csrf_checks=True)

    assert autosave(client, rubric).status_code == 403
    assert not WorkingCopy.objects.exists()
    client.get(reverse("rubric_detail", args=[rubric.id]))  # sets the CSRF cookie
    token = client.cookies[settings.CSRF_COOKIE_NAME].value
    response = client.post(
        reverse("rubric_working_copy", args=[rubric.id]),
        autosave_post(rubric),
        headers={"X-CSRFToken": token},
    )
    assert response.status_code == 200 and WorkingCopy.objects.count() == 1


def test_signed_out_autosave_is_sent_to_the_login_page(client, make_rubric):
    rubric = make_rubric()

    response = client.post(reverse("rubric_working_copy", args=[rubric.id]), {})

    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


# --- Limits ---------------------------------------------------------------------------------------


def too_many_rows(rubric) -> dict:
    rows = [("", f"Criterion {i}", True) for i in range(settings.EVALSITE_MAX_CRITERIA + 1)]
    return autosave_post(rubric, rows=rows)


@pytest.mark.parametrize(
    ("post", "field", "message"),
    [
        (
            lambda r: autosave_post(r, rows=[("", "ok", True), ("", "x" * 5001, True)]),
            "criteria[1].description",
            f"Criterion 2 is 5,001 characters; the limit is {CRITERION_MAX_CHARS:,}.",
        ),
        (
            too_many_rows,
            "criteria",
            f"at most {settings.EVALSITE_MAX_CRITERIA} criteria (got "
            f"{settings.EVALSITE_MAX_CRITERIA + 1})",
        ),
        (lambda r: autosave_post(r, note="n" * 301), "note", "at most 300 characters (got 301)"),
        (
            lambda r: autosave_post(r, instructions="i" * (MAX_INSTRUCTIONS_CHARS + 1)),
            "instructions",
            "at most 4,000 characters (got 4,001)",
        ),
        (
            lambda r: autosave_post(r, import_text="p" * 100_001),
            "import_text",
            "at most 100,000 characters (got 100,001)",
        ),
        (
            lambda r: autosave_post(r, run_token_budget="9" * 21),
            "run_token_budget",
            "at most 20 characters (got 21)",
        ),
        (
            lambda r: autosave_post(r, rows=[("k" * 33, "ok", True)]),
            "criteria[0].key",
            "at most 32 characters",
        ),
        (lambda r: autosave_post(r, judge_view="sideways"), "judge_view", "not a judge view"),
        (lambda r: autosave_post(r, note="a\x00b"), "note", "must not contain NUL characters"),
        (
            lambda r: autosave_post(r, rows=[("", "a\x00b", True)]),
            "criteria[0].description",
            "Null characters are not allowed.",
        ),
        (lambda r: autosave_post(r, base="7"), "base_version", "this rubric has no version 7"),
        (lambda r: autosave_post(r, base="v1"), "base_version", "must be a version number"),
        (
            lambda r: {k: v for k, v in autosave_post(r).items() if k != "c-TOTAL_FORMS"},
            "criteria",
            "ManagementForm data is missing",
        ),
    ],
)
def test_input_over_a_limit_is_a_422_naming_the_field_and_keeps_nothing(
    owner, make_rubric, post, field, message
):
    rubric = make_rubric()

    response = signed_in(owner).post(reverse("rubric_working_copy", args=[rubric.id]), post(rubric))

    assert response.status_code == 422, response.content
    errors = response.json()["extra"]["errors"]
    assert list(errors) == [field] and message in errors[field]
    assert message in response.json()["message"]
    assert not WorkingCopy.objects.exists()


def test_a_criterion_at_the_limit_is_kept(owner, make_rubric):
    rubric = make_rubric()

    response = autosave(signed_in(owner), rubric, rows=[("", "x" * CRITERION_MAX_CHARS, True)])

    assert response.status_code == 200 and WorkingCopy.objects.count() == 1


def test_the_service_refuses_a_state_of_another_shape(owner, make_rubric):
    rubric = make_rubric()
    state = WorkingCopyState(criteria=[]).model_dump() | {"surprise": 1}

    with pytest.raises(ValueError, match="surprise"):
        working_copy_save(rubric=rubric, user=owner, state=state, base_number=None, based_on=None)


def test_a_rubric_without_versions_keeps_edits_based_on_none(owner, make_rubric):
    rubric = make_rubric(criteria=[])
    client = signed_in(owner)
    assert rubric.current_version is None

    response = autosave(client, rubric, rows=[("", "A first criterion", True)], base="")

    assert response.json()["state"] == "saved" and response.json()["base_version"] is None
    page = editor(client, rubric)
    assert "You have unsaved edits from" in page and "based on version" not in page
    assert "A first criterion" in page


# --- Pages older than the stored edits (another tab, the back button) ------------------------


def test_an_autosave_from_a_page_older_than_the_stored_edits_is_refused(owner, make_rubric):
    rubric = make_rubric()
    client = signed_in(owner)
    first = autosave(client, rubric, note="First thought", revision="")
    assert first.status_code == 200
    newer = autosave(client, rubric, note="Second thought", revision=first.json()["revision"])
    assert newer.status_code == 200 and newer.json()["revision"] != first.json()["revision"]

    # The page that sent the first autosave comes back from the history and autosaves again.
    stale = autosave(
        client, rubric, note="First thought, edited", revision=first.json()["revision"]
    )

    assert stale.status_code == 409
    assert stale.json()["message"].startswith("Not saved: newer edits of this rubric were saved")
    assert "Reload the page" in stale.json()["message"]
    copy = WorkingCopy.objects.get(rubric=rubric, user=owner)
    assert copy.state["note"] == "Second thought"
    assert str(copy.revision) == newer.json()["revision"]


def test_an_autosave_from_a_page_opened_before_a_copy_existed_is_refused(owner, make_rubric):
    rubric = make_rubric()
    client = signed_in(owner)
    autosave(client, rubric, note="From the new tab", revision="")

    stale = autosave(client, rubric, note="From the old tab", revision="")

    assert stale.status_code == 409
    assert WorkingCopy.objects.get(rubric=rubric, user=owner).state["note"] == "From the new tab"


def test_edits_saved_as_a_version_do_not_come_back_from_an_older_page(owner, make_rubric):
    rubric = make_rubric()
    client = signed_in(owner)
    rows = edited_rows(rubric)
    opened = autosave(client, rubric, rows=rows, note="Dates matter", revision="").json()
    # Saved as version 2 (which deletes the copy), then the editor page of before comes back.
    client.post(
        reverse("rubric_criteria", args=[rubric.id]),
        draft_post(rubric, rows, "save", note="Dates matter"),
    )
    assert rubric.versions.count() == 2 and not WorkingCopy.objects.exists()

    from_copy = autosave(
        client, rubric, rows=rows, note="Dates matter", revision=opened["revision"]
    )
    from_version = autosave(client, rubric, rows=rows, note="Dates matter", base="1", revision="")

    assert (
        from_copy.status_code == 409
        and "saved as a version or discarded" in (from_copy.json()["message"])
    )
    assert from_version.status_code == 409
    assert from_version.json()["message"].startswith("Not saved: version 2 was saved after")
    assert not WorkingCopy.objects.exists()  # the next version will not reuse the old note
    page = editor(client, rubric)
    assert 'data-base-version="2" data-revision=""' in page


def test_the_editor_page_says_which_revision_its_autosaves_build_on(owner, make_rubric):
    rubric = make_rubric()
    client = signed_in(owner)
    saved = autosave(client, rubric, revision="").json()

    page = editor(client, rubric)

    assert f'data-revision="{saved["revision"]}"' in page


def test_a_malformed_revision_is_a_422_naming_it(owner, make_rubric):
    rubric = make_rubric()

    response = autosave(signed_in(owner), rubric, revision="not-a-uuid")

    assert response.status_code == 422
    assert response.json()["extra"]["errors"] == {"revision": "must be a revision id"}
