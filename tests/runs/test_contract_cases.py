"""The scoring-contract cases of issue 16 through the server: a real Celery worker (and the
web process's own judge path) with the fake judge, the run page and the API.

* no output at all: the rubric fails every criterion and alignment scores 0, and the judge
  receives no request;
* `both` without a user message: the system perspective alone, marked on the evaluation,
  in the API and on the run page;
* exact sums: a perfect alignment answer stores exactly 1.0; display rounding half up.
"""

from __future__ import annotations

import importlib
import re

import pytest
from django.apps import apps as django_apps
from django.urls import reverse

from judge_engine.alignment import NO_OUTPUT
from judge_engine.rubric import NO_OUTPUT_REASONING
from runs.models import AlignmentBreakdown, CriterionVerdict, Evaluation, Kind, Status
from tests.conftest import wait_for
from tests.page_helpers import judged_run, signed_in

SYSTEM_ONLY = {"messages": [{"role": "system", "content": "Be polite. [[scores:0.5,0.5,1,1]]"}]}
PERFECT = {
    "messages": [
        {"role": "system", "content": "Be polite. [[scores:1,1,1,1]]"},
        {"role": "user", "content": "Where is my refund? [[scores:1,1,1,1]]"},
    ]
}


def ended(run) -> list[Evaluation] | None:
    evaluations = list(Evaluation.objects.filter(run=run))
    if evaluations and all(e.status in (Status.SUCCEEDED, Status.FAILED) for e in evaluations):
        return evaluations
    return None


@pytest.mark.worker
def test_a_run_without_output_is_scored_by_the_worker_without_any_judge_request(
    worker, fake_judge, make_rubric, make_run
):
    rubric = make_rubric(alignment_mode="both")
    run = make_run(rubric=rubric.slug, output="")

    evaluations = wait_for(lambda: ended(run), timeout=60, message="both evaluations")

    by_kind = {e.kind: e for e in evaluations}
    assert {e.status for e in evaluations} == {Status.SUCCEEDED}
    scored = by_kind[Kind.RUBRIC]
    assert (scored.passed, scored.score, scored.judge_calls, scored.calls) == (False, 0.0, 0, [])
    assert (scored.criteria_judged, scored.criteria_reused) == (0, 0)
    verdicts = CriterionVerdict.objects.filter(evaluation=scored)
    assert verdicts.count() == 3
    assert {(v.satisfied, v.reasoning) for v in verdicts} == {(False, NO_OUTPUT_REASONING)}
    alignment = by_kind[Kind.ALIGNMENT]
    assert (alignment.score, alignment.judge_calls, alignment.band) == (0.0, 0, "very poor")
    perspectives = AlignmentBreakdown.objects.filter(evaluation=alignment)
    assert sorted(p.perspective for p in perspectives) == ["system", "user"]
    for p in perspectives:
        assert (p.intent_score, p.requirements_score, p.completeness_score) == (0, 0, 0)
        assert (p.appropriateness_score, p.intent_reasoning) == (0, NO_OUTPUT)
    assert fake_judge.stats()["requests"] == 0
    run.refresh_from_db()
    assert run.passed is False


@pytest.mark.django_db(transaction=True)
def test_the_run_page_says_nothing_was_sent_to_the_judge_for_a_run_without_output(
    fake_judge, make_rubric, make_run, owner
):
    run = judged_run(make_run, rubric=make_rubric().slug, output="")

    page = signed_in(owner).get(reverse("run_detail", args=[run.id])).content.decode()
    assert 'data-testid="not-judged"' in page
    reason = re.search(r'<pre class="reason" id="reason-text">(.*?)</pre>', page, re.S)
    assert reason and reason.group(1).count(f"— {NO_OUTPUT_REASONING}") == 3  # each criterion
    assert fake_judge.stats()["requests"] == 0


@pytest.mark.worker
def test_the_worker_scores_both_without_a_user_message_from_the_system_prompt_alone(
    worker, fake_judge, make_rubric, make_run
):
    rubric = make_rubric(alignment_mode="both", criteria="- Answers")
    run = make_run(rubric=rubric.slug, input=SYSTEM_ONLY)

    evaluations = wait_for(lambda: ended(run), timeout=60, message="both evaluations")

    alignment = next(e for e in evaluations if e.kind == Kind.ALIGNMENT)
    assert alignment.status == Status.SUCCEEDED, alignment.error
    assert (alignment.user_applicable, alignment.system_applicable) == (False, True)
    assert (alignment.user_score, alignment.system_score, alignment.score) == (None, 0.65, 0.65)
    assert alignment.judge_calls == 1
    assert "User perspective not applicable (no user message)" in alignment.reason


@pytest.mark.django_db(transaction=True)
def test_the_run_page_and_the_api_say_the_user_perspective_was_not_applicable(
    fake_judge, make_rubric, make_run, owner, api
):
    rubric = make_rubric(alignment_mode="both", criteria="- Answers")
    run = judged_run(make_run, rubric=rubric.slug, input=SYSTEM_ONLY)

    page = signed_in(owner).get(reverse("run_detail", args=[run.id])).content.decode()
    assert 'data-testid="user-not-applicable"' in page
    assert 'data-testid="system-not-applicable"' not in page
    body = api.get(f"/runs/{run.id}").json()
    [alignment] = [e["alignment"] for e in body["evaluations"] if e["kind"] == "alignment"]
    assert (alignment["user_applicable"], alignment["system_applicable"]) == (False, True)
    assert (alignment["user"], alignment["user_score"]) == (None, None)
    assert (alignment["score"], alignment["display_score"]) == (0.65, 0.65)


@pytest.mark.django_db(transaction=True)
def test_a_perfect_alignment_answer_is_stored_and_served_as_exactly_one(
    fake_judge, make_rubric, make_run, api
):
    rubric = make_rubric(alignment_mode="both", criteria="- Answers")
    run = judged_run(make_run, rubric=rubric.slug, input=PERFECT)

    alignment = Evaluation.objects.get(run=run, kind=Kind.ALIGNMENT)
    assert (alignment.score, alignment.user_score, alignment.system_score) == (1.0, 1.0, 1.0)
    assert run.alignment_score == 1.0
    body = api.get(f"/runs/{run.id}").json()
    [served] = [e["alignment"] for e in body["evaluations"] if e["kind"] == "alignment"]
    assert (served["score"], served["display_score"], served["user_applicable"]) == (1.0, 1.0, True)


@pytest.mark.django_db(transaction=True)
def test_scores_on_the_run_page_are_rounded_half_up(fake_judge, make_rubric, make_run, owner):
    rubric = make_rubric(alignment_mode="user", criteria="- Answers")
    five_eighths = {
        "messages": [{"role": "user", "content": "Q? [[scores:0.625,0.625,0.625,0.625]]"}]
    }
    run = judged_run(make_run, rubric=rubric.slug, input=five_eighths)

    page = signed_in(owner).get(reverse("run_detail", args=[run.id])).content.decode()
    assert '<span class="big">0.63</span>' in page
    assert "0.63 × 0.40 = <strong>0.25</strong>" in page  # each dimension, half up too
    assert re.findall(r"0\.62(?!5)", page) == []  # the task text itself says 0.625


@pytest.mark.django_db(transaction=True)
def test_the_migration_marks_stored_alignment_results_by_whether_they_have_a_user_score(
    fake_judge, make_rubric, make_run
):
    backfill = importlib.import_module("runs.migrations.0011_evaluation_user_applicable").backfill
    both = judged_run(make_run, rubric=make_rubric(name="b", alignment_mode="both").slug)
    system = judged_run(make_run, rubric=make_rubric(name="s", alignment_mode="system").slug)
    stored = Evaluation.objects.filter(kind=Kind.ALIGNMENT)
    assert stored.filter(status=Status.SUCCEEDED).count() == 2
    stored.update(user_applicable=None)  # as rows written before the field existed
    pending = make_run(rubric=make_rubric(name="p", alignment_mode="both").slug)

    backfill(django_apps, None)

    flags = {e.run_id: e.user_applicable for e in stored}
    assert (flags[both.id], flags[system.id], flags[pending.id]) == (True, False, None)
