"""Review pages: queue, reviewing a run with plain forms, agreement, calibration, fragments."""

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from reviews.models import RunReview, VerdictLabel, VerdictOverride
from reviews.services import override_create, review_confirm

from .conftest import FAILING, judge_pending


@pytest.fixture
def client_for(db):
    def make(user, enforce_csrf: bool = False) -> Client:
        client = Client(enforce_csrf_checks=enforce_csrf)
        client.force_login(user)
        return client

    return make


def review_url(rubric, run, **query):
    url = reverse("reviews:review", args=[rubric.id, run.id])
    return url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def queue_queries(client, rubric) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(reverse("reviews:queue", args=[rubric.id])).status_code == 200
    return len(ctx.captured_queries)


def test_the_queue_shows_progress_and_costs_the_same_queries_for_more_runs(
    client_for, teammate, judged_run, rubric, reviewer
):
    client = client_for(teammate)
    first = judged_run()
    for key in ("c1", "c2", "c3"):
        review_confirm(run=first, criterion_key=key, reviewer=reviewer)
    judged_run(output=FAILING)
    few = queue_queries(client, rubric)
    for _ in range(4):
        judged_run()

    assert queue_queries(client, rubric) == few
    page = client.get(reverse("reviews:queue", args=[rubric.id])).content.decode()
    assert "1 of 6 reviewed" in page
    assert page.count("to review") >= 5


def test_next_claims_a_run_for_the_reviewer_and_another_for_a_second_reviewer(
    client_for, teammate, owner, judged_run, rubric
):
    runs = {judged_run().pk, judged_run().pk}
    next_url = reverse("reviews:next", args=[rubric.id])

    first = client_for(teammate).post(next_url)
    second = client_for(owner).post(next_url)

    claimed = {r.url.split("/runs/")[1].strip("/").split("/")[0] for r in (first, second)}
    assert {str(pk) for pk in runs} == claimed
    assert set(RunReview.objects.values_list("claimed_by__username", flat=True)) == {
        "teo",
        "olivia",
    }


def test_an_empty_queue_says_so_after_next(client_for, teammate, rubric):
    response = client_for(teammate).post(reverse("reviews:next", args=[rubric.id]), follow=True)

    assert "Nothing left to review" in response.content.decode()


def test_agreeing_through_the_form_confirms_and_moves_the_focus_on(
    client_for, teammate, judged_run, rubric
):
    run = judged_run()

    response = client_for(teammate).post(
        reverse("reviews:verdict", args=[rubric.id, run.id]),
        {"criterion": "c1", "satisfied": "true"},
    )

    assert response.status_code == 302 and response.url.endswith("?focus=c2")
    assert VerdictLabel.objects.get(criterion_key="c1").satisfied is True


def test_disagreeing_without_a_note_shows_the_error_at_the_criterion(
    client_for, teammate, judged_run, rubric
):
    run = judged_run()

    response = client_for(teammate).post(
        reverse("reviews:verdict", args=[rubric.id, run.id]),
        {"criterion": "c2", "satisfied": "false", "note": ""},
    )

    assert response.status_code == 422
    assert "Note: a note is required" in response.content.decode()
    assert not VerdictOverride.objects.exists()


def test_disagreeing_with_a_note_shows_both_results_and_the_history(
    client_for, teammate, judged_run, rubric
):
    run = judged_run(output=FAILING)
    client = client_for(teammate)

    client.post(
        reverse("reviews:verdict", args=[rubric.id, run.id]),
        {"criterion": "c2", "satisfied": "true", "note": "Order named as 1234"},
    )
    page = client.get(review_url(rubric, run)).content.decode()

    assert "changed by review" in page and "(overridden)" in page
    assert "Order named as 1234" in page and "Overrode the judge" in page


def test_reverting_through_the_form_restores_the_judges_verdict(
    client_for, teammate, judged_run, rubric, reviewer
):
    run = judged_run(output=FAILING)
    row = override_create(
        run=run, criterion_key="c2", satisfied=True, note="yes", reviewer=reviewer
    ).row

    client_for(teammate).post(
        reverse("reviews:revert", args=[rubric.id, run.id]), {"change": str(row.pk)}
    )

    run.refresh_from_db()
    assert run.passed is False and not VerdictLabel.objects.exists()


def test_criterion_text_and_output_are_escaped(
    client_for, teammate, make_rubric, make_run, fake_judge
):
    rubric = make_rubric(
        name="XSS",
        criteria=[{"description": 'Says "<script>alert(1)</script>"'}],
        alignment_mode="off",
    )
    run = make_run(rubric=rubric.slug, output="<script>alert(2)</script>")
    judge_pending()

    page = client_for(teammate).get(review_url(rubric, run)).content.decode()

    assert "<script>alert(1)" not in page and "<script>alert(2)" not in page
    assert "&lt;script&gt;alert(1)" in page


def test_a_viewer_reads_the_review_page_without_forms_and_cannot_post(
    client_for, viewer, judged_run, rubric
):
    run = judged_run()
    client = client_for(viewer)

    page = client.get(review_url(rubric, run))
    posted = client.post(
        reverse("reviews:verdict", args=[rubric.id, run.id]),
        {"criterion": "c1", "satisfied": "true"},
    )

    assert page.status_code == 200 and 'data-action="agree"' not in page.content.decode()
    assert posted.status_code == 403 and not VerdictOverride.objects.exists()
    assert not RunReview.objects.filter(claimed_by=viewer).exists()


def test_forms_need_the_csrf_token(client_for, teammate, judged_run, rubric):
    run = judged_run()

    response = client_for(teammate, enforce_csrf=True).post(
        reverse("reviews:verdict", args=[rubric.id, run.id]),
        {"criterion": "c1", "satisfied": "true"},
    )

    assert response.status_code == 403 and not VerdictOverride.objects.exists()


def test_another_teams_pages_are_404(client_for, stranger, judged_run, rubric, api):
    run = judged_run()
    client = client_for(stranger)
    started = api.post(
        f"/rubrics/{rubric.id}/consistency-checks", {"sample": 1, "repeats": 1}
    ).json()

    for url in (
        reverse("reviews:queue", args=[rubric.id]),
        review_url(rubric, run),
        reverse("reviews:agreement", args=[rubric.id]),
        reverse("reviews:export", args=[rubric.id, "csv"]),
        reverse("reviews:golden", args=[rubric.id]),
        reverse("reviews:run_panel", args=[run.id]),
        reverse("reviews:rubric_flags", args=[rubric.id]),
        reverse("reviews:calibration", args=[started["id"]]),
    ):
        assert client.get(url).status_code == 404, url
    assert (
        client.post(
            reverse("reviews:verdict", args=[rubric.id, run.id]),
            {"criterion": "c1", "satisfied": "true"},
        ).status_code
        == 404
    )
    assert client.post(reverse("reviews:next", args=[rubric.id])).status_code == 404


def test_the_agreement_page_shows_the_confusion_matrix_and_flags_low_kappa(
    client_for, teammate, judged_run, rubric, reviewer
):
    run = judged_run()
    override_create(
        run=run, criterion_key="c1", satisfied=False, note="Not a refund", reviewer=reviewer
    )

    page = client_for(teammate).get(reverse("reviews:agreement", args=[rubric.id])).content.decode()

    assert 'data-testid="flagged"' in page and "low kappa" in page
    assert 'title="False positives">1<' in page


def test_the_export_link_downloads_csv(client_for, teammate, judged_run, rubric, reviewer):
    run = judged_run()
    review_confirm(run=run, criterion_key="c1", reviewer=reviewer)

    response = client_for(teammate).get(reverse("reviews:export", args=[rubric.id, "csv"]))

    body = b"".join(response.streaming_content).decode()
    assert response["Content-Disposition"].endswith('reviews.csv"')
    assert body.splitlines()[0].startswith("run_id,external_id") and len(body.splitlines()) == 2


def test_a_golden_run_started_from_the_page_reports_on_its_own_page(
    client_for, teammate, judged_run, rubric, reviewer
):
    run = judged_run()
    for key in ("c1", "c2", "c3"):
        review_confirm(run=run, criterion_key=key, reviewer=reviewer)
    client = client_for(teammate)
    client.post(reverse("reviews:golden_mark", args=[rubric.id, run.id]), {"golden": "true"})
    assert (
        "[c2] Gives the &quot;order number&quot;"
        in client.get(reverse("reviews:golden", args=[rubric.id])).content.decode()
    )

    started = client.post(
        reverse("reviews:golden_start", args=[rubric.id]),
        {"criteria": '[c1] Mentions "refund"\n[c2] Says "sorry"'},
    )
    judge_pending()
    page = client.get(started.url).content.decode()

    assert started.status_code == 302
    assert "1 of 1 judgements done" in page and "reworded" in page


def test_a_consistency_check_with_too_many_repeats_shows_the_field_error(
    client_for, teammate, judged_run, rubric
):
    judged_run()

    response = client_for(teammate).post(
        reverse("reviews:consistency_start", args=[rubric.id]), {"sample": 5, "repeats": 50}
    )

    assert response.status_code == 422 and "Repeats: between 1 and 10" in response.content.decode()


def test_the_run_page_panel_shows_the_judge_and_the_human_result(
    client_for, teammate, judged_run, reviewer
):
    run = judged_run(output=FAILING)
    override_create(run=run, criterion_key="c2", satisfied=True, note="Gave it", reviewer=reviewer)

    page = client_for(teammate).get(reverse("reviews:run_panel", args=[run.id])).content.decode()

    assert "With reviews" in page and "overridden" in page and "Gave it" in page


def test_the_run_page_includes_the_review_panel_without_extra_queries(
    client_for, teammate, judged_run
):
    run = judged_run()

    page = client_for(teammate).get(reverse("run_detail", args=[run.id])).content.decode()

    assert f'hx-get="{reverse("reviews:run_panel", args=[run.id])}"' in page


def test_the_rubric_flags_fragment_lists_low_kappa_criteria(
    client_for, teammate, judged_run, rubric, reviewer
):
    run = judged_run()
    override_create(run=run, criterion_key="c1", satisfied=False, note="No", reviewer=reviewer)

    page = (
        client_for(teammate).get(reverse("reviews:rubric_flags", args=[rubric.id])).content.decode()
    )

    assert "below kappa 0.40" in page and "c1" in page


def test_next_ignores_a_malformed_skip_value(client_for, teammate, judged_run, rubric):
    run = judged_run()

    response = client_for(teammate).post(
        reverse("reviews:next", args=[rubric.id]), {"skip": "not-a-uuid"}
    )

    assert response.status_code == 302 and str(run.id) in response.url


def test_the_rubric_page_links_to_the_review_pages_and_loads_the_flags(
    client_for, teammate, rubric
):
    page = client_for(teammate).get(reverse("rubric_detail", args=[rubric.id])).content.decode()

    assert f'hx-get="{reverse("reviews:rubric_flags", args=[rubric.id])}"' in page
    assert reverse("reviews:queue", args=[rubric.id]) in page


def test_a_tool_using_run_shows_its_trajectory_and_the_steps_each_verdict_cites(
    client_for, teammate, make_rubric, make_run, fake_judge
):
    from rubrics.services import rubric_set_judge_view

    rubric = make_rubric(
        name="Tools", criteria=[{"description": 'Looked it up ("tool call lookup")'}]
    )
    rubric_set_judge_view(rubric=rubric, judge_view="trajectory")
    call = {"id": "k1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    run = make_run(
        rubric=rubric.slug,
        output=[
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "k1", "content": "<b>found</b>"},
            {"role": "assistant", "content": "Found it."},
        ],
    )
    judge_pending()

    page = client_for(teammate).get(review_url(rubric, run)).content.decode()

    assert 'data-testid="review-trajectory"' in page
    assert 'id="step-2"' in page and "&lt;b&gt;found&lt;/b&gt;" in page
    assert '<a class="mono" href="#step-2">step 2</a>' in page


def test_a_typed_alignment_score_is_kept_when_the_note_is_missing(
    client_for, teammate, make_rubric, make_run, fake_judge
):
    from reviews.models import AlignmentLabel

    rubric = make_rubric(name="Aligned", alignment_mode="user")
    run = make_run(rubric=rubric.slug)
    judge_pending()

    response = client_for(teammate).post(
        reverse("reviews:alignment", args=[rubric.id, run.id]),
        {"perspective": "user", "dimension": "intent", "score": "0.35", "note": ""},
    )

    body = response.content.decode()
    assert response.status_code == 422 and not AlignmentLabel.objects.exists()
    assert 'id="score-user-intent" name="score" min="0" max="1" step="0.05" value="0.35"' in body


def test_a_disagreement_refused_for_its_note_keeps_the_typed_note(
    client_for, teammate, judged_run, rubric
):
    run = judged_run()
    long_note = "n" * 6000  # over the note's limit

    response = client_for(teammate).post(
        reverse("reviews:verdict", args=[rubric.id, run.id]),
        {"criterion": "c2", "satisfied": "false", "note": long_note},
    )

    assert response.status_code == 422 and f">{long_note}</textarea>" in response.content.decode()
