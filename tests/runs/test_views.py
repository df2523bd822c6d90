"""Run pages: home, the runs list (filters, pages, live status cell), run detail, access rules,
CSRF and escaping. Judged runs come from the real ingest → execute path and the fake judge."""

from __future__ import annotations

import uuid

import pytest
from django.urls import reverse

from runs.models import AgentRun, Evaluation, Status
from tests.page_helpers import XSS, judge_pending, judged_run, queries_for, signed_in

pytestmark = pytest.mark.django_db

PASSING = "Your refund for order number 1234 was sent today, thanks for waiting."
FAILING = "We will look into it."


@pytest.fixture
def rubric(make_rubric):
    return make_rubric()


def listed(response) -> list[AgentRun]:
    assert response.status_code == 200, response.content[:500]
    return list(response.context["runs"])


# --- Runs list -------------------------------------------------------------------------------------


def test_the_runs_list_shows_newest_first_with_results(owner, rubric, make_run, fake_judge):
    old = judged_run(make_run, rubric=rubric.slug, output=PASSING, external_id="old")
    new = judged_run(make_run, rubric=rubric.slug, output=FAILING, external_id="new")

    response = signed_in(owner).get(reverse("run_list"))

    assert [r.pk for r in listed(response)] == [new.pk, old.pk]
    page = response.content.decode()
    assert "Passed" in page and "Failed" in page


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"passed": "false"}, {"fails-c1"}),
        ({"passed": "true"}, {"passes"}),
        ({"failing_criterion": "c2"}, {"fails-c1"}),
        ({"failing_criterion": "c1"}, {"fails-c1"}),
        ({"agent": "other-bot"}, {"other"}),
        ({"q": "look into"}, {"fails-c1"}),
        ({"status": "queued"}, {"queued"}),
        ({"sort": "oldest"}, {"passes", "fails-c1", "other", "queued"}),
    ],
)
def test_the_runs_list_filters_by_each_field(owner, rubric, make_run, fake_judge, query, expected):
    judged_run(make_run, rubric=rubric.slug, output=PASSING, external_id="passes")
    judged_run(make_run, rubric=rubric.slug, output=FAILING, external_id="fails-c1")
    judged_run(make_run, agent="other-bot", external_id="other")
    make_run(rubric=rubric.slug, external_id="queued")

    runs = listed(signed_in(owner).get(reverse("run_list"), query))

    assert {r.external_id for r in runs} == expected


def test_the_runs_list_filters_by_rubric_and_version(
    owner, rubric, make_rubric, make_run, fake_judge
):
    from rubrics.services import rubric_set_criteria

    judged_run(make_run, rubric=rubric.slug, external_id="v1")
    rubric_set_criteria(rubric=rubric, criteria="- Anything")
    judged_run(make_run, rubric=rubric.slug, external_id="v2")
    judged_run(make_run, rubric=make_rubric(name="Other").slug, external_id="elsewhere")
    client = signed_in(owner)

    by_rubric = listed(client.get(reverse("run_list"), {"rubric": str(rubric.id)}))
    by_version = listed(client.get(reverse("run_list"), {"rubric": str(rubric.id), "version": "1"}))

    assert {r.external_id for r in by_rubric} == {"v1", "v2"}
    assert [r.external_id for r in by_version] == ["v1"]


def test_the_runs_list_filters_by_date_range(owner, make_run):
    from datetime import UTC, datetime, timedelta

    from django.utils import timezone

    run = make_run(external_id="today")
    AgentRun.objects.filter(pk=make_run(external_id="last-year").pk).update(
        created_at=timezone.now() - timedelta(days=365)
    )
    today = datetime.now(tz=UTC).date().isoformat()

    runs = listed(signed_in(owner).get(reverse("run_list"), {"since": today, "until": today}))

    assert [r.pk for r in runs] == [run.pk]


def test_an_invalid_filter_is_named_and_lists_nothing(owner, make_run):
    make_run()

    response = signed_in(owner).get(reverse("run_list"), {"since": "not-a-date"})

    assert listed(response) == [] and "since" in response.context["filter_errors"]


def test_pages_follow_the_keyset_cursor_without_overlap(owner, make_run, settings):
    ids = [make_run(external_id=f"r{i}").pk for i in range(7)]
    client = signed_in(owner)
    seen = []
    url = reverse("run_list")
    params: dict = {}
    import runs.views

    original = runs.views.PAGE_SIZE
    runs.views.PAGE_SIZE = 3
    try:
        while True:
            response = client.get(url, params)
            seen += [r.pk for r in listed(response)]
            if not response.context["page"].next_cursor:
                break
            params = {"cursor": response.context["page"].next_cursor}
    finally:
        runs.views.PAGE_SIZE = original

    assert seen == list(reversed(ids))


def test_a_stale_cursor_asks_to_start_again(owner, make_run):
    make_run()
    response = signed_in(owner).get(reverse("run_list"), {"cursor": "garbage!"})
    assert "cursor" in response.context["filter_errors"]


def test_the_runs_list_runs_the_same_queries_for_five_or_forty_runs(owner, rubric, make_run):
    client = signed_in(owner)
    for _ in range(5):
        make_run(rubric=rubric.slug)
    url = reverse("run_list") + f"?rubric={rubric.id}&failing_criterion=c1"
    small = queries_for(client, url), queries_for(client, reverse("run_list"))
    for _ in range(35):
        make_run(rubric=rubric.slug)

    assert (queries_for(client, url), queries_for(client, reverse("run_list"))) == small


def test_an_htmx_filter_change_answers_with_the_region_partial(owner, make_run):
    make_run()

    response = signed_in(owner).get(
        reverse("run_list"), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="runs-region"
    )

    page = response.content.decode()
    assert page.lstrip().startswith('<div id="runs-region"') and "<html" not in page


def test_a_queued_run_polls_its_status_cell_and_a_judged_one_does_not(
    owner, rubric, make_run, fake_judge
):
    run = make_run(rubric=rubric.slug, output=PASSING)
    client = signed_in(owner)

    pending = client.get(reverse("run_status", args=[run.id])).content.decode()
    judge_pending(run)
    final = client.get(reverse("run_status", args=[run.id])).content.decode()

    assert 'hx-trigger="every 2s"' in pending and "Queued" in pending
    assert "hx-trigger" not in final and "Passed" in final


def test_agent_text_with_a_script_tag_shows_as_text_in_the_runs_list(owner, make_run):
    make_run(input={"messages": [{"role": "user", "content": f"Hi {XSS}"}]}, agent=f"a{XSS}")

    page = signed_in(owner).get(reverse("run_list")).content.decode()

    assert XSS not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


# --- Run detail ------------------------------------------------------------------------------------


def test_a_failed_run_shows_its_verdicts_reason_and_alignment(owner, rubric, make_run, fake_judge):
    run = judged_run(
        make_run, rubric=rubric.slug, output="Your refund is on its way.", alignment="both"
    )

    response = signed_in(owner).get(reverse("run_detail", args=[run.id]))

    d = response.context["d"]
    assert d.rubric_eval.passed is False
    assert [(v.criterion_key, v.satisfied) for v in d.verdicts] == [
        ("c1", True),
        ("c2", False),
        ("c3", False),
    ]
    assert {p.perspective for p in d.perspectives} == {"user", "system"}
    page = response.content.decode()
    assert "✗" in page and "✓" in page and 'data-copy="#reason-text"' in page
    assert page.count('data-testid="alignment-bars"') == 2 and "= <strong>" in page
    assert "What the judge saw" in page and "Raw answer" in page


def test_a_run_without_a_system_prompt_says_the_system_perspective_does_not_apply(
    owner, make_run, fake_judge
):
    run = judged_run(
        make_run,
        alignment="both",
        input={"messages": [{"role": "user", "content": "Where is my refund?"}]},
    )

    page = signed_in(owner).get(reverse("run_detail", args=[run.id])).content.decode()

    assert "System perspective not applicable" in page


def test_a_judge_error_is_shown_on_the_run_page(owner, rubric, make_run, fake_judge):
    run = judged_run(make_run, rubric=rubric.slug, output="[[judge:400]] nope")

    page = signed_in(owner).get(reverse("run_detail", args=[run.id])).content.decode()

    assert Evaluation.objects.get(run=run).status == Status.FAILED
    assert "The judge could not score this run" in page


def test_earlier_evaluations_are_listed_and_can_be_shown(owner, rubric, make_run, fake_judge):
    from judging.services.rescore import run_rescore
    from rubrics.services import rubric_set_criteria

    run = judged_run(make_run, rubric=rubric.slug, output=PASSING)
    first = Evaluation.objects.get(run=run)
    rubric_set_criteria(rubric=rubric, criteria='- Says "never"')
    run_rescore(run=run)
    Evaluation.objects.filter(run=run, held=True).update(held=False)
    judge_pending(run)
    client = signed_in(owner)

    current = client.get(reverse("run_detail", args=[run.id])).context["d"]
    earlier = client.get(reverse("run_detail", args=[run.id]), {"evaluation": first.id}).context[
        "d"
    ]

    assert current.rubric_eval.rubric_version.number == 2 and current.rubric_eval.passed is False
    assert [e.pk for e in current.others] == [first.pk]
    assert earlier.rubric_eval.pk == first.pk and earlier.rubric_eval.passed is True


def test_the_run_page_runs_the_same_queries_for_three_or_thirty_criteria(
    owner, make_rubric, make_run, fake_judge
):
    small_rubric = make_rubric(name="Small", criteria="- A\n- B\n- C", alignment_mode="both")
    big_rubric = make_rubric(
        name="Big", criteria="\n".join(f"- Item {i}" for i in range(30)), alignment_mode="both"
    )
    small = judged_run(make_run, rubric=small_rubric.slug)
    big = judged_run(make_run, rubric=big_rubric.slug)
    client = signed_in(owner)

    assert queries_for(client, reverse("run_detail", args=[small.id])) == queries_for(
        client, reverse("run_detail", args=[big.id])
    )


def test_a_pending_run_page_refreshes_itself_until_judged(owner, rubric, make_run, fake_judge):
    run = make_run(rubric=rubric.slug)
    client = signed_in(owner)

    pending = client.get(reverse("run_detail", args=[run.id])).content.decode()
    judge_pending(run)
    final = client.get(reverse("run_detail", args=[run.id])).content.decode()

    assert 'hx-trigger="every 2s"' in pending and 'hx-trigger="every 2s"' not in final


def test_agent_output_with_a_script_tag_shows_as_text_on_the_run_page(
    owner, rubric, make_run, fake_judge
):
    run = judged_run(
        make_run,
        rubric=rubric.slug,
        output=f"**Bold** {XSS} [link](javascript:alert(2)) <img src=x onerror=alert(3)>",
        input={
            "messages": [
                {"role": "system", "content": XSS},
                {"role": "user", "content": f"# Hi {XSS}"},
            ]
        },
    )

    page = signed_in(owner).get(reverse("run_detail", args=[run.id])).content.decode()

    assert XSS not in page and "<strong>Bold</strong>" in page
    assert 'href="javascript' not in page and "<img" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_another_teams_run_is_not_found(stranger, make_run):
    run = make_run()
    client = signed_in(stranger)

    assert client.get(reverse("run_detail", args=[run.id])).status_code == 404
    assert client.get(reverse("run_status", args=[run.id])).status_code == 404


def test_another_teams_runs_never_appear_in_the_list(stranger, make_run):
    make_run(external_id="secret")
    response = signed_in(stranger).get(reverse("run_list"))
    assert listed(response) == [] and "secret" not in response.content.decode()


def test_a_missing_run_is_not_found(owner):
    assert signed_in(owner).get(reverse("run_detail", args=[uuid.uuid4()])).status_code == 404


# --- Home --------------------------------------------------------------------------------------------


def test_home_shows_pass_rate_chart_status_counts_and_usage(owner, rubric, make_run, fake_judge):
    judged_run(make_run, rubric=rubric.slug, output=PASSING, alignment="both")
    judged_run(make_run, rubric=rubric.slug, output=FAILING)

    response = signed_in(owner).get(reverse("home"))

    o = response.context["o"]
    assert (o.runs_total, o.judged_total, o.passed_total) == (2, 2, 1)
    assert dict(o.statuses)["succeeded"] == 3
    page = response.content.decode()
    assert "<svg" in page and "Support quality" in page and "50%" in page


def test_home_runs_the_same_queries_whatever_the_data(owner, make_rubric, make_run, fake_judge):
    client = signed_in(owner)
    judged_run(make_run, rubric=make_rubric(name="A").slug)
    small = queries_for(client, reverse("home"))
    for i in range(4):
        judged_run(make_run, rubric=make_rubric(name=f"R{i}").slug, alignment="both")

    assert queries_for(client, reverse("home")) == small


def test_a_user_without_a_team_is_told_so(make_user):
    user = make_user("loner")
    response = signed_in(user).get(reverse("home"), follow=True)
    assert "not in a team" in response.content.decode()


def test_the_team_switcher_changes_the_team_shown(owner, other_team, make_run):
    from teams.services import membership_set

    membership_set(team=other_team, user=owner, role="viewer")
    make_run(external_id="acme-run")
    client = signed_in(owner)

    before = client.get(reverse("run_list")).content.decode()
    client.post(reverse("team_switch"), {"team": str(other_team.id), "next": "/runs/"})
    after = client.get(reverse("run_list")).content.decode()

    assert "acme-run" in before and "acme-run" not in after and "Globex" in after
