"""The review API: overrides with history, agreement, exports, golden set, consistency."""

import csv
import io
import json

import pytest

from reviews.models import VerdictOverride
from tests.api_client import assert_error, field_locs

from .conftest import FAILING, judge_pending


@pytest.fixture
def failing_run(judged_run):
    return judged_run(output=FAILING)


def test_overriding_a_verdict_answers_201_with_the_row_and_the_adjusted_result(api, failing_run):
    r = api.post(
        f"/runs/{failing_run.id}/overrides",
        {"criterion_id": "c2", "satisfied": True, "note": "Order 1234 is named"},
    )

    assert r.status_code == 201, r.content
    body = r.json()
    assert body["created"] is True
    assert body["override"]["action"] == "override"
    assert (body["override"]["judge_satisfied"], body["override"]["to_satisfied"]) == (False, True)
    assert body["override"]["reviewer"].startswith("API key tests")
    assert body["run"]["passed"] is True


def test_agreeing_with_the_judge_confirms_and_repeating_it_answers_200(api, failing_run):
    first = api.post(f"/runs/{failing_run.id}/overrides", {"criterion_id": "c1", "satisfied": True})
    again = api.post(f"/runs/{failing_run.id}/overrides", {"criterion_id": "c1", "satisfied": True})

    assert first.status_code == 201 and first.json()["override"]["action"] == "confirm"
    assert again.status_code == 200 and again.json()["created"] is False
    assert VerdictOverride.objects.count() == 1


def test_disagreeing_without_a_note_is_a_422_naming_the_note(api, failing_run):
    r = api.post(f"/runs/{failing_run.id}/overrides", {"criterion_id": "c1", "satisfied": False})

    assert field_locs(r) == [["body", "payload", "note"]]


def test_an_unknown_criterion_or_a_wrong_type_is_a_422_naming_the_field(api, failing_run):
    unknown = api.post(
        f"/runs/{failing_run.id}/overrides", {"criterion_id": "c7", "satisfied": True}
    )
    wrong = api.post(
        f"/runs/{failing_run.id}/overrides", {"criterion_id": "c1", "satisfied": "yes"}
    )
    extra = api.post(
        f"/runs/{failing_run.id}/overrides", {"criterion_id": "c1", "satisfied": True, "x": 1}
    )

    assert field_locs(unknown) == [["body", "payload", "criterion_id"]]
    assert ["body", "payload", "satisfied"] in field_locs(wrong)
    assert ["body", "payload", "x"] in field_locs(extra)


def test_a_run_not_judged_yet_is_a_409(api, make_run, rubric):
    run = make_run(rubric=rubric.slug)

    r = api.post(f"/runs/{run.id}/overrides", {"criterion_id": "c1", "satisfied": True})

    assert_error(r, 409)


def test_without_a_key_every_review_endpoint_answers_401(anon, failing_run, rubric):
    for r in (
        anon.post(f"/runs/{failing_run.id}/overrides", {"criterion_id": "c1", "satisfied": True}),
        anon.get(f"/runs/{failing_run.id}/overrides"),
        anon.get(f"/rubrics/{rubric.id}/agreement"),
        anon.get(f"/rubrics/{rubric.id}/reviews.csv"),
        anon.post(f"/rubrics/{rubric.id}/consistency-checks", {}),
    ):
        assert_error(r, 401)


def test_another_teams_run_and_rubric_answer_404_and_nothing_is_written(
    other_api, failing_run, rubric
):
    for r in (
        other_api.post(
            f"/runs/{failing_run.id}/overrides",
            {"criterion_id": "c2", "satisfied": True, "note": "x"},
        ),
        other_api.get(f"/runs/{failing_run.id}/overrides"),
        other_api.get(f"/rubrics/{rubric.id}/agreement"),
        other_api.get(f"/rubrics/{rubric.slug}/reviews.jsonl"),
        other_api.post(f"/rubrics/{rubric.id}/golden-runs", {}),
    ):
        assert_error(r, 404)
    assert not VerdictOverride.objects.exists()


def test_a_viewer_signed_in_reads_reviews_but_cannot_override(session_api, viewer, failing_run):
    client = session_api(viewer)

    assert client.get(f"/runs/{failing_run.id}/overrides").status_code == 200
    assert_error(
        client.post(f"/runs/{failing_run.id}/overrides", {"criterion_id": "c1", "satisfied": True}),
        403,
    )


def test_a_signed_in_editor_is_named_as_the_reviewer(session_api, teammate, failing_run):
    r = session_api(teammate).post(
        f"/runs/{failing_run.id}/overrides", {"criterion_id": "c1", "satisfied": True}
    )

    assert r.status_code == 201 and r.json()["override"]["reviewer"] == "teo"


def test_listing_shows_both_results_each_verdict_and_the_history_with_reverts(api, failing_run):
    made = api.post(
        f"/runs/{failing_run.id}/overrides", {"criterion_id": "c2", "satisfied": True, "note": "ok"}
    )
    change = made.json()["override"]["id"]
    reverted = api.post(f"/runs/{failing_run.id}/overrides/{change}/revert", {"note": "misread"})
    api.post(
        f"/runs/{failing_run.id}/overrides",
        {"criterion_id": "c3", "satisfied": True, "note": "polite"},
    )

    body = api.get(f"/runs/{failing_run.id}/overrides").json()

    assert reverted.status_code == 201 and reverted.json()["override"]["action"] == "revert"
    assert body["judge"]["passed"] is False and body["effective"]["passed"] is False
    by_key = {v["criterion_id"]: v for v in body["verdicts"]}
    assert by_key["c2"]["human_satisfied"] is None and by_key["c2"]["satisfied"] is False
    assert by_key["c3"] | {"reasoning": "", "change_id": None, "reviews": []} == {
        "criterion_id": "c3", "description": 'Says "thanks"', "required": False,
        "judge_satisfied": False, "human_satisfied": True, "disputed": False, "satisfied": True,
        "overridden": True, "note": "polite", "reasoning": "", "change_id": None, "reviews": [],
    }  # fmt: skip
    assert [(b["satisfied"], b["note"]) for b in by_key["c3"]["reviews"]] == [(True, "polite")]
    assert by_key["c2"]["reviews"] == []  # the revert took the only verdict back
    assert [(h["action"], h["criterion_id"], h["reverted"]) for h in body["history"]] == [
        ("override", "c3", False), ("revert", "c2", False), ("override", "c2", True),
    ]  # fmt: skip


def test_reverting_a_replaced_change_is_a_409_and_an_unknown_one_a_404(api, failing_run, other_api):
    first = api.post(
        f"/runs/{failing_run.id}/overrides", {"criterion_id": "c2", "satisfied": True, "note": "a"}
    )
    api.post(f"/runs/{failing_run.id}/overrides", {"criterion_id": "c2", "satisfied": False})
    change = first.json()["override"]["id"]

    assert_error(api.post(f"/runs/{failing_run.id}/overrides/{change}/revert", {}), 409)
    assert_error(other_api.post(f"/runs/{failing_run.id}/overrides/{change}/revert", {}), 404)
    assert_error(api.post(f"/runs/{failing_run.id}/overrides/{failing_run.id}/revert", {}), 404)


def test_agreement_returns_per_criterion_figures_as_specified(api, judged_run, rubric):
    # c2 on four runs: judge says no, no, yes, yes; humans say no, yes, yes, yes.
    runs = [judged_run(output=FAILING), judged_run(output=FAILING), judged_run(), judged_run()]
    for run, human in zip(runs, [False, True, True, True], strict=True):
        api.post(
            f"/runs/{run.id}/overrides",
            {"criterion_id": "c2", "satisfied": human, "note": "checked"},
        )

    body = api.get(f"/rubrics/{rubric.slug}/agreement").json()

    assert body["version"] == 1 and body["kappa_threshold"] == 0.4
    c2 = next(c for c in body["criteria"] if c["criterion_id"] == "c2")
    # tp=2 fn=1 tn=1: p_o = 3/4; judge yes 1/2, human yes 3/4: p_e = 3/8 + 1/8 = 1/2; kappa 1/2.
    assert c2 == {
        "criterion_id": "c2", "description": 'Gives the "order number"', "labelled": 4,
        "agreement": 0.75, "kappa": 0.5, "tpr": 2 / 3, "tnr": 1.0,
        "confusion": {"tp": 2, "fp": 0, "fn": 1, "tn": 1}, "flagged": False,
        "reviewers": {"items": 0, "reviewers": 1, "method": None, "kappa": None},
    }  # fmt: skip
    assert body["disputed"] == [] and body["disputed_total"] == 0
    c1 = next(c for c in body["criteria"] if c["criterion_id"] == "c1")
    assert c1["labelled"] == 0 and c1["kappa"] is None and c1["agreement"] is None


def test_agreement_of_a_version_that_does_not_exist_is_a_404_and_a_bad_number_a_422(api, rubric):
    assert_error(api.get(f"/rubrics/{rubric.id}/agreement", version=9), 404)
    assert api.get(f"/rubrics/{rubric.id}/agreement", version=0).status_code == 422


def test_the_csv_export_lists_each_reviewed_verdict_and_defuses_formulas(api, failing_run, rubric):
    api.post(
        f"/runs/{failing_run.id}/overrides",
        {"criterion_id": "c2", "satisfied": True, "note": "=HYPERLINK(1)"},
    )
    api.post(f"/runs/{failing_run.id}/overrides", {"criterion_id": "c1", "satisfied": True})

    r = api.get(f"/rubrics/{rubric.id}/reviews.csv")

    assert r.status_code == 200 and r["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(r.streaming_content).decode())))
    assert [
        (x["criterion_id"], x["judge_satisfied"], x["human_satisfied"], x["agree"]) for x in rows
    ] == [
        ("c2", "False", "True", "False"),
        ("c1", "True", "True", "True"),
    ]
    assert rows[0]["note"] == "'=HYPERLINK(1)" and rows[0]["run_id"] == str(failing_run.id)


def test_the_jsonl_export_has_one_object_per_reviewed_verdict(api, failing_run, rubric):
    api.post(
        f"/runs/{failing_run.id}/overrides",
        {"criterion_id": "c3", "satisfied": True, "note": "said thank you"},
    )

    r = api.get(f"/rubrics/{rubric.slug}/reviews.jsonl")

    lines = b"".join(r.streaming_content).decode().splitlines()
    assert len(lines) == 1
    row = json.loads(lines[0])
    assert row["criterion_id"] == "c3" and row["criterion"] == 'Says "thanks"'
    assert (row["judge_satisfied"], row["human_satisfied"], row["note"]) == (
        False,
        True,
        "said thank you",
    )
    assert row["rubric_version"] == 1 and row["reviewer"].startswith("API key")


def test_marking_golden_needs_a_fully_reviewed_run(api, failing_run):
    assert_error(api.post(f"/runs/{failing_run.id}/golden", {"golden": True}), 409)
    for key in ("c1", "c2", "c3"):
        api.post(
            f"/runs/{failing_run.id}/overrides",
            {"criterion_id": key, "satisfied": True, "note": "fine"},
        )

    r = api.post(f"/runs/{failing_run.id}/golden", {"golden": True})

    assert r.status_code == 200 and r.json()["golden"] is True
    assert api.get(f"/runs/{failing_run.id}/overrides").json()["golden"] is True


def test_a_golden_run_with_reworded_criteria_reports_agreement_and_flips(
    api, failing_run, judged_run, rubric
):
    passing = judged_run()
    for run, human in ((failing_run, True), (passing, True)):
        for key in ("c1", "c2", "c3"):
            api.post(
                f"/runs/{run.id}/overrides", {"criterion_id": key, "satisfied": human, "note": "ok"}
            )
        api.post(f"/runs/{run.id}/golden", {"golden": True})
    # The candidate rewords c2 so that the failing run ("Your refund was sent today.") now
    # satisfies it: its verdict flips from no to yes, in line with the human label.
    candidate = '[c1] Mentions "refund"\n[c2] Says when it was "sent"\n[optional] Says "thanks"'

    started = api.post(f"/rubrics/{rubric.id}/golden-runs", {"criteria": candidate})
    judge_pending()
    report = api.get(f"/calibrations/{started.json()['id']}").json()

    assert started.status_code == 202, started.content
    assert report["progress"] == {"total": 2, "finished": 2, "failed": 0, "done": True}
    by_key = {c["criterion_id"]: c for c in report["criteria"]}
    assert by_key["c2"]["reworded"] is True
    assert (by_key["c2"]["compared"], by_key["c2"]["flipped"]) == (2, 1)
    assert by_key["c2"]["agreement"] == 1.0 and by_key["c2"]["labelled"] == 2
    assert by_key["c3"]["agreement"] == 0.5  # the failing run never says "thanks"
    failing_run.refresh_from_db()
    assert failing_run.passed is True  # its own result is untouched by the golden run


def test_a_golden_run_needs_a_golden_set_and_names_the_field(api, rubric):
    assert field_locs(api.post(f"/rubrics/{rubric.id}/golden-runs", {})) == [
        ["body", "payload", "golden"]
    ]


def test_a_consistency_check_judges_each_sampled_run_n_times(api, judged_run, rubric, fake_judge):
    judged_run(), judged_run(output=FAILING)
    calls = fake_judge.stats()["completions"]

    started = api.post(f"/rubrics/{rubric.slug}/consistency-checks", {"repeats": 3, "sample": 5})
    assert judge_pending() == 6
    report = api.get(f"/calibrations/{started.json()['id']}").json()

    assert started.status_code == 202 and started.json()["runs"] == 2
    assert fake_judge.stats()["completions"] - calls == 6  # forced: no verdict reuse
    assert report["progress"]["done"] is True
    assert all(
        (c["compared"], c["flipped"], c["flip_rate"], c["flagged"]) == (2, 0, 0.0, False)
        for c in report["criteria"]
    )


def test_consistency_check_limits_are_422s_naming_the_field(api, rubric):
    assert ["body", "payload", "repeats"] in field_locs(
        api.post(f"/rubrics/{rubric.id}/consistency-checks", {"repeats": 11})
    )
    assert field_locs(api.post(f"/rubrics/{rubric.id}/consistency-checks", {})) == [
        ["body", "payload", "runs"]
    ]
