"""GET /api/runs: the dashboard's filters, keyset pagination and a fixed query count."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.http import QueryDict

from judging.services.execute import evaluation_execute
from rubrics.services import CriterionInput, rubric_set_criteria
from runs.models import AgentRun, Evaluation
from runs.selectors import RunFilterError, RunFilters
from tests.api_client import field_locs
from tests.conftest import queued_evaluation


def ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [item["id"] for item in response.json()["items"]]


def judged(run) -> AgentRun:
    """Run the run's evaluations in-process against the fake judge (the real service)."""
    for evaluation in Evaluation.objects.filter(run=run):
        evaluation_execute(evaluation_id=str(evaluation.id))
    run.refresh_from_db()
    return run


@pytest.fixture
def scored(fake_judge, make_rubric, make_run, other_team):
    """Runs with known results: passing, failing c2 (order number), failing c1 and c2."""
    rubric = make_rubric()
    other = make_rubric(name="Tone", criteria=['Says "hello"'])
    runs = {
        "pass": judged(make_run(rubric=rubric.slug, agent="bot-a", external_id="ext-pass")),
        "no_order": judged(
            make_run(rubric=rubric.slug, agent="bot-b", output="Your refund is on its way.")
        ),
        "nothing": judged(
            make_run(rubric=rubric.slug, agent="bot-b", output="Hello, we are looking.")
        ),
        "other": judged(make_run(rubric=other.slug, agent="bot-a", output="hello there")),
        "unscored": make_run(agent="bot-c", output="Plain output about a parcel"),
        "foreign": make_run(team=other_team, agent="bot-a"),
    }
    return rubric, other, {k: str(v.id) for k, v in runs.items()}


def test_the_list_holds_the_teams_runs_newest_first(api, scored):
    _, _, runs = scored
    listed = ids(api.get("/runs"))
    assert runs["foreign"] not in listed
    assert listed == [runs[k] for k in ("unscored", "other", "nothing", "no_order", "pass")]


def test_list_items_carry_the_current_result_and_previews(api, scored):
    _, _, runs = scored
    item = next(i for i in api.get("/runs").json()["items"] if i["id"] == runs["no_order"])
    assert (item["status"], item["passed"], item["score"], item["rubric_version"]) == (
        "succeeded",
        False,
        0.0,
        1,
    )
    assert item["output_preview"] == "Your refund is on its way."
    assert item["task_preview"].startswith("Where is my refund")


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"passed": "true"}, ["other", "pass"]),
        ({"passed": "false"}, ["nothing", "no_order"]),
        ({"rubric": "support-quality", "failing_criterion": "c2"}, ["nothing", "no_order"]),
        ({"rubric": "support-quality", "failing_criterion": "c1"}, ["nothing"]),
        ({"failing_criterion": "c1"}, ["nothing"]),
        ({"rubric": "support-quality", "failing_criterion": "c3"}, ["nothing", "no_order"]),
        ({"agent": "bot-b"}, ["nothing", "no_order"]),
        ({"status": "queued"}, []),
        ({"status": "nothing_to_judge", "agent": "bot-c"}, ["unscored"]),
        ({"status": "succeeded", "agent": "bot-c"}, []),
        ({"q": "PARCEL"}, ["unscored"]),
        ({"q": "ext-pa"}, ["pass"]),
        ({"q": "where is my refund", "agent": "bot-a"}, ["other", "pass"]),
        ({"rubric": "tone", "version": "1"}, ["other"]),
        ({"version": "2"}, []),
    ],
)
def test_filters_select_the_matching_runs(api, scored, query, expected):
    _, _, runs = scored
    assert ids(api.get("/runs", **query)) == [runs[k] for k in expected]


def test_the_rubric_filter_takes_an_id_too(api, scored):
    rubric, _, runs = scored
    assert ids(api.get("/runs", rubric=str(rubric.id))) == [
        runs[k] for k in ("nothing", "no_order", "pass")
    ]


def test_a_failing_criterion_that_later_passes_no_longer_matches(api, scored):
    """Only current verdicts count: re-scoring on a reworded c2 replaces the old verdicts."""
    rubric, _, runs = scored
    version, _ = rubric_set_criteria(
        rubric=rubric,
        criteria=[
            CriterionInput('Mentions "refund"', True, "c1"),
            CriterionInput('Mentions "refund" or an order', True, "c2"),
        ],
    )
    run = AgentRun.objects.get(pk=runs["no_order"])
    newer = queued_evaluation(run=run, kind="rubric", rubric=rubric, version=version)
    evaluation_execute(evaluation_id=str(newer.id))

    failing = ids(api.get("/runs", rubric=rubric.slug, failing_criterion="c2"))
    assert failing == [runs["nothing"]]


def test_since_and_until_bound_the_creation_time(api, team, make_run):
    old, mid, new = make_run(agent="old"), make_run(agent="mid"), make_run(agent="new")
    day = datetime(2025, 3, 10, 12, tzinfo=UTC)
    for run, when in ((old, day - timedelta(days=2)), (mid, day), (new, day + timedelta(days=2))):
        AgentRun.objects.filter(pk=run.pk).update(created_at=when)

    assert ids(api.get("/runs", since="2025-03-10")) == [str(new.id), str(mid.id)]
    assert ids(api.get("/runs", until="2025-03-10")) == [str(mid.id), str(old.id)]
    assert ids(api.get("/runs", since="2025-03-10T13:00:00Z")) == [str(new.id)]
    assert ids(api.get("/runs", since="2025-03-09", until="2025-03-10T11:00:00+00:00")) == []


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"passed": "maybe"}, "passed"),
        ({"status": "sleeping"}, "status"),
        ({"since": "last tuesday"}, "since"),
        ({"version": "0"}, "version"),
        ({"q": "x" * 201}, "q"),
        ({"cursor": "bm90LWEtY3Vyc29y"}, "cursor"),
    ],
)
def test_invalid_filters_are_a_422_naming_the_parameter(api, query, field):
    assert any(loc[-1] == field for loc in field_locs(api.get("/runs", **query)))


def test_cursor_pagination_is_complete_and_stable_while_runs_arrive(api, make_run):
    made = [str(make_run(agent="a").id) for _ in range(7)]
    # Same timestamp for several runs: the id breaks the tie.
    AgentRun.objects.filter(pk__in=made[:4]).update(created_at=datetime(2025, 1, 1, tzinfo=UTC))

    seen: list[str] = []
    cursor = None
    while True:
        page = api.get("/runs", limit=3, **({"cursor": cursor} if cursor else {})).json()
        seen += [item["id"] for item in page["items"]]
        make_run(agent="late")  # newer than every page: must not shift later pages
        cursor = page["next_cursor"]
        if cursor is None:
            break

    assert sorted(seen) == sorted(made) and len(seen) == len(set(seen))
    everything = ids(api.get("/runs", agent="a", limit=50))
    assert seen == everything


def test_the_page_size_is_capped(api, make_run, settings):
    settings.EVALSITE_PAGE_SIZE_MAX = 3
    for _ in range(5):
        make_run()
    page = api.get("/runs", limit=100).json()
    assert len(page["items"]) == 3 and page["next_cursor"]
    assert field_locs(api.get("/runs", limit=0))


@pytest.mark.parametrize("extra_runs", [5, 50])
def test_the_list_costs_a_fixed_number_of_queries(
    api, make_rubric, make_run, extra_runs, django_assert_num_queries
):
    rubric = make_rubric()
    for i in range(extra_runs):
        make_run(rubric=rubric.slug, agent=f"agent-{i}")
    AgentRun.objects.update(current_version=rubric.current_version)
    api.get("/runs")  # records the key's last use, a write that happens once a minute

    # 1 query for the API key, 1 for the page (rubric and version joined).
    with django_assert_num_queries(2):
        response = api.get("/runs", limit=100, rubric=rubric.slug, passed="false", q="refund")
    assert response.status_code == 200


def test_run_filters_parse_a_query_dict_for_the_html_views():
    filters = RunFilters.from_query(
        QueryDict("rubric=support&passed=false&until=2025-03-10&agent=")
    )
    assert filters.rubric == "support" and filters.passed is False and filters.agent is None
    assert filters.until == datetime(2025, 3, 11, tzinfo=UTC)
    assert filters.to_query() == {
        "rubric": "support",
        "passed": "false",
        "until": "2025-03-11T00:00:00+00:00",
    }
    with pytest.raises(RunFilterError) as caught:
        RunFilters.from_query(QueryDict("passed=perhaps&version=x"))
    assert set(caught.value.errors) == {"passed", "version"}
