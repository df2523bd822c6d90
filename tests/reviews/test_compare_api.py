"""/api/comparisons, drafts, the gate and publishing, judged in-process by the fake judge."""

from __future__ import annotations

import csv
import io
import json

from rubrics.models import RubricVersion
from tests.api_client import assert_error, field_locs

from .conftest import judge_pending
from .test_compare import DRAFT, labelled  # noqa: F401 - the fixture

BODY = {"rubric": "", "b": {"draft": {"criteria": DRAFT}}, "sample": {"kind": "labelled"}}


def _body(rubric, **changes):
    return {**BODY, "rubric": rubric.slug, **changes}


def test_a_comparison_answers_202_and_its_report_shows_the_flips(api, rubric, labelled):  # noqa: F811
    _, failing = labelled
    response = api.post("/comparisons", _body(rubric))
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["b"]["draft"] is True and body["estimate"]["a"]["criterion_judgements"] == 0
    judge_pending()
    report = api.get(f"/comparisons/{body['id']}").json()
    c2 = next(c for c in report["criteria"] if c["criterion_id"] == "c2")
    assert c2["fail_to_pass"] == 3
    assert sorted(c2["fail_to_pass_runs"]) == sorted(str(r.pk) for r in failing)
    assert (c2["pass_rate_a"], c2["pass_rate_b"]) == (0.5, 1.0)
    assert c2["human_a"]["kappa"] == 1.0 and c2["human_b"]["agreement"] == 0.5
    assert sorted(report["run_flips"]["fail_to_pass"]) == sorted(str(r.pk) for r in failing)
    assert report["done"] is True


def test_a_dry_run_answers_the_estimate_of_both_sides(api, rubric, labelled):  # noqa: F811
    response = api.post("/comparisons", _body(rubric, dry_run=True))
    assert response.status_code == 200, response.content
    assert set(response.json()["estimate"]) == {"a", "b", "total"}


def test_the_export_has_a_row_per_run_and_criterion_in_csv_and_jsonl(api, rubric, labelled):  # noqa: F811
    comparison = api.post("/comparisons", _body(rubric)).json()
    judge_pending()
    text = api.get(f"/comparisons/{comparison['id']}/export", format="csv").content.decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 18 and sum(r["flipped"] == "True" for r in rows) == 3
    lines = api.get(f"/comparisons/{comparison['id']}/export", format="jsonl").content.splitlines()
    assert len(lines) == 18 and {"a", "b", "human"} <= set(json.loads(lines[0]))


def test_comparing_a_version_with_itself_is_a_422_naming_b(api, rubric, labelled):  # noqa: F811
    response = api.post("/comparisons", _body(rubric, b={"version": 1}))
    assert ["body", "payload", "b"] in field_locs(response)


def test_bad_input_is_a_422_naming_the_field(api, rubric, labelled):  # noqa: F811
    assert ["body", "payload", "b", "version"] in field_locs(
        api.post("/comparisons", _body(rubric, b={"version": 99}))
    )
    assert ["body", "payload", "sample", "n"] in field_locs(
        api.post("/comparisons", _body(rubric, sample={"kind": "latest", "n": 0}))
    )
    assert ["body", "payload", "b", "draft", "criteria"] in field_locs(
        api.post("/comparisons", _body(rubric, b={"draft": {"criteria": []}}))
    )
    assert ["body", "payload", "sample", "kind"] in field_locs(
        api.post("/comparisons", _body(rubric, sample={"kind": "everything"}))
    )


def test_another_teams_comparison_is_a_404(api, other_api, rubric, labelled):  # noqa: F811
    comparison = api.post("/comparisons", _body(rubric)).json()
    assert other_api.get(f"/comparisons/{comparison['id']}").status_code == 404
    assert other_api.post("/comparisons", _body(rubric)).status_code == 404


def test_a_gate_without_labels_is_a_422_saying_how_to_label(api, rubric):
    response = api.put(f"/rubrics/{rubric.slug}/gate", {"min_kappa": 0.4})
    assert ["body", "payload", "gate"] in field_locs(response)
    assert "review queue" in response.json()["detail"][0]["msg"]


def test_publishing_through_the_gate_checks_then_refuses_with_the_report(api, rubric, labelled):  # noqa: F811
    assert api.put(f"/rubrics/{rubric.slug}/gate", {"min_agreement": 0.9}).status_code == 200
    draft = api.post(f"/rubrics/{rubric.slug}/drafts", {"criteria": DRAFT})
    assert draft.status_code == 201 and draft.json()["published"] is False
    number = draft.json()["number"]
    first = api.post(f"/rubrics/{rubric.slug}/versions/{number}/publish", {})
    assert first.status_code == 202 and first.json()["state"] == "checking"
    judge_pending()
    refused = assert_error(api.post(f"/rubrics/{rubric.slug}/versions/{number}/publish", {}), 409)
    failing = refused["extra"]["comparison"]["gate_result"]["failing"]
    assert [f["criterion_id"] for f in failing] == ["c2"]
    forced = api.post(
        f"/rubrics/{rubric.slug}/versions/{number}/publish", {"override_reason": "known issue"}
    )
    assert forced.status_code == 200 and forced.json()["state"] == "published"
    assert "known issue" in RubricVersion.objects.get(rubric=rubric, number=number).gate_note


def test_without_a_gate_publishing_a_draft_is_immediate(api, rubric):
    number = api.post(f"/rubrics/{rubric.slug}/drafts", {"criteria": DRAFT}).json()["number"]
    response = api.post(f"/rubrics/{rubric.slug}/versions/{number}/publish", {})
    assert response.status_code == 200 and response.json()["version"]["published"] is True
    assert_error(api.post(f"/rubrics/{rubric.slug}/versions/{number}/publish", {}), 409)


def test_under_a_gate_criteria_writes_through_the_rubric_api_are_a_409(api, rubric, labelled):  # noqa: F811
    api.put(f"/rubrics/{rubric.slug}/gate", {"max_drop": 0.1})
    text = '- Mentions "refund"\n- Mentions "sent"\n- [optional] Says "thanks"'
    refused = assert_error(api.put(f"/rubrics/{rubric.slug}/criteria", {"criteria": text}), 409)
    assert "publishing gate" in refused["message"]
    assert_error(api.patch(f"/rubrics/{rubric.slug}", {"judge_view": "conversation"}), 409)
    # Unchanged criteria create nothing and pass; removing the gate restores direct writes.
    api.put(f"/rubrics/{rubric.slug}/gate", {})
    assert api.put(f"/rubrics/{rubric.slug}/criteria", {"criteria": text}).status_code == 201


def test_the_csv_export_quotes_cells_that_would_start_a_formula(api, rubric, judged_run):
    judged_run(external_id="=HYPERLINK(1)")
    comparison = api.post(
        "/comparisons", {"rubric": rubric.slug, "b": {"draft": {"criteria": DRAFT}}}
    ).json()
    judge_pending()
    text = api.get(f"/comparisons/{comparison['id']}/export", format="csv").content.decode()
    assert "'=HYPERLINK(1)" in text and ",=HYPERLINK" not in text


def test_a_draft_with_too_long_instructions_is_a_422_naming_the_limit(api, rubric):
    response = api.post(
        f"/rubrics/{rubric.slug}/drafts", {"criteria": DRAFT, "instructions": "x" * 4001}
    )
    assert ["body", "payload", "instructions"] in field_locs(response)
    assert "4,000" in response.json()["detail"][0]["msg"]
