"""Sampling at ingest: the decision recorded on each run, not_sampled runs, the settings
(API and editor), and a re-score of the runs sampling left out."""

from __future__ import annotations

import pytest
from django.db import transaction

from judge_engine.sampling import SampleFilters, sample_bucket, sample_decide
from runs.models import AgentRun, Evaluation, Status
from runs.payloads import RunPayload
from runs.services.ingest_many import runs_ingest_many
from tests.api_client import field_locs
from tests.conftest import run_payload
from tests.page_helpers import judge_pending, signed_in

pytestmark = pytest.mark.django_db


def ingest_many(team, payloads: list[dict]) -> list[AgentRun]:
    with transaction.atomic():
        results, errors = runs_ingest_many(
            team=team, payloads=[RunPayload.model_validate(p) for p in payloads]
        )
    assert not errors
    return [run for run, _ in results]


def expected(run: AgentRun, rubric, filters=SampleFilters()) -> bool:
    bucket = sample_bucket(run.team_id, rubric.pk, run.external_id or run.content_hash)
    return sample_decide(
        rate=rubric.sample_rate, filters=filters, bucket=bucket, agent=run.agent,
        metadata=run.metadata, request_context=run.request_context,
    ).sampled  # fmt: skip


def test_at_twenty_percent_each_run_is_decided_by_its_hash_and_left_out_runs_are_not_sampled(
    team, make_rubric
):
    rubric = make_rubric(sample_rate=20)
    runs = ingest_many(
        team, [run_payload(rubric=rubric.slug, external_id=f"r-{i}") for i in range(1_000)]
    )

    stored = {r.pk: r for r in AgentRun.objects.filter(team=team)}
    judged = set(Evaluation.objects.filter(team=team).values_list("run_id", flat=True))
    for run in runs:
        row = stored[run.pk]
        sampled = expected(row, rubric)
        assert row.sampling["sampled"] is sampled and row.sampling["rate"] == 20
        assert row.status == (Status.QUEUED if sampled else Status.NOT_SAMPLED)
        assert (row.pk in judged) is sampled
        assert row.passed is None
    share = len(judged) / len(runs) * 100
    assert abs(share - 20) <= 5, share
    assert {r.sampling["reason"] for r in stored.values() if not r.sampling["sampled"]} == {"rate"}


def test_the_same_run_sent_twice_is_decided_the_same_way(team, make_rubric, make_run):
    rubric = make_rubric(sample_rate=50)
    first = [make_run(rubric=rubric.slug, output=f"answer {i}") for i in range(40)]
    again = [make_run(rubric=rubric.slug, output=f"answer {i}") for i in range(40)]
    named = [make_run(rubric=rubric.slug, external_id=f"e-{i}") for i in range(40)]
    named_again = [make_run(rubric=rubric.slug, external_id=f"e-{i}") for i in range(40)]

    assert [r.pk for r in named] == [r.pk for r in named_again]  # idempotent on external_id
    assert [r.status for r in first] == [r.status for r in again]
    assert [r.sampling for r in first] == [r.sampling for r in again]
    assert {Status.QUEUED, Status.NOT_SAMPLED} <= {r.status for r in first + named}


def test_filters_leave_out_other_agents_and_runs_without_the_metadata_or_context(
    team, make_rubric, make_run
):
    filters = {"agents": ["bot-a"], "metadata_equals": {"env": "prod"}, "context_has": ["uid"]}
    rubric = make_rubric(sample_filters=filters)
    good = {"agent": "bot-a", "metadata": {"env": "prod"}, "request_context": {"uid": 1}}
    cases = {
        "sampled": make_run(rubric=rubric.slug, **good),
        "filter: agents": make_run(rubric=rubric.slug, **(good | {"agent": "bot-b"})),
        "filter: metadata_equals.env": make_run(
            rubric=rubric.slug, **(good | {"metadata": {"env": "dev"}})
        ),
        "filter: context_has.uid": make_run(rubric=rubric.slug, **(good | {"request_context": {}})),
    }

    for reason, run in cases.items():
        assert run.sampling["reason"] == reason
        assert run.status == (Status.QUEUED if reason == "sampled" else Status.NOT_SAMPLED)


def test_inline_criteria_and_rubric_less_runs_are_not_sampled_away(api, team, make_rubric):
    rubric = make_rubric(sample_rate=0)
    body = run_payload(rubric=rubric.slug, criteria="Is polite", timeout=0.01)

    answer = api.post("/score", body)

    assert answer.status_code in (200, 202), answer.content
    run = AgentRun.objects.get(team=team)
    assert run.status in (Status.QUEUED, Status.RUNNING) and run.sampling == {}


@pytest.mark.django_db(transaction=True)  # the web process's inline thread reads the run
def test_a_score_call_naming_a_sampled_rubric_is_always_judged(api, team, make_rubric, fake_judge):
    """POST /api/score asks for a score: sampling, which is for traffic sent to be judged
    later, never leaves its run out."""
    rubric = make_rubric(sample_rate=0)

    answer = api.post("/score", run_payload(rubric=rubric.slug, timeout=30, inline=True))

    assert answer.status_code == 200, answer.content
    assert (answer.json()["status"], answer.json()["passed"]) == ("succeeded", True)
    assert AgentRun.objects.get(team=team).sampling == {}


def test_the_api_stores_a_not_sampled_run_shows_the_decision_and_filters_by_status(
    api, make_rubric
):
    rubric = make_rubric(sample_rate=0)

    created = api.post("/runs", run_payload(rubric=rubric.slug, external_id="x1"))

    assert created.status_code == 201, created.content
    body = created.json()
    assert body["status"] == "not_sampled" and body["evaluations"] == []
    assert body["sampling"]["sampled"] is False and body["sampling"]["reason"] == "rate"
    listed = api.get("/runs", status="not_sampled").json()["items"]
    assert [i["id"] for i in listed] == [body["id"]]
    assert listed[0]["passed"] is None and listed[0]["sampling"]["rate"] == 0
    assert api.get("/runs", status="succeeded").json()["items"] == []


def test_a_rescore_filtered_on_not_sampled_judges_exactly_the_runs_sampling_left_out(
    api, fake_judge, team, make_rubric, make_run
):
    rubric = make_rubric(sample_rate=50)
    runs = [make_run(rubric=rubric.slug, external_id=f"s-{i}") for i in range(30)]
    left_out = {r.pk for r in runs if r.status == Status.NOT_SAMPLED}
    assert left_out and len(left_out) < len(runs)

    answer = api.post("/rescore", {"rubric": rubric.slug, "status": "not_sampled"})

    assert answer.status_code == 202, answer.content
    assert answer.json()["total"] == len(left_out)
    batch_runs = set(
        Evaluation.objects.filter(batch__isnull=False).values_list("run_id", flat=True)
    )
    assert batch_runs == left_out
    for run in AgentRun.objects.filter(pk__in=left_out):
        judged = judge_pending(run)
        assert judged.status == Status.SUCCEEDED and judged.passed is True
        assert judged.sampling["sampled"] is False  # the ingest decision stays recorded


def test_a_cancelled_rescore_leaves_a_not_sampled_run_not_sampled(
    api, fake_judge, team, make_rubric, make_run
):
    rubric = make_rubric(sample_rate=0)
    run = make_run(rubric=rubric.slug)
    answer = api.post("/rescore", {"rubric": rubric.slug, "runs": [str(run.pk)]})
    assert answer.status_code == 202, answer.content
    batch = answer.json()
    run.refresh_from_db()
    assert run.status == Status.QUEUED

    assert api.post(f"/batches/{batch['id']}/cancel").status_code == 200

    run.refresh_from_db()
    assert run.status == Status.NOT_SAMPLED


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({"sample_rate": 100.5}, "sample_rate"),
        ({"sample_rate": -1}, "sample_rate"),
        ({"sample_filters": {"agents": "bot"}}, "sample_filters.agents"),
        ({"sample_filters": {"agent": ["bot"]}}, "sample_filters.agent"),
        ({"sample_filters": {"metadata_equals": {"k": [1]}}}, "sample_filters.metadata_equals.k"),
        ({"sample_filters": {"context_has": ["  "]}}, "sample_filters"),
    ],
)
def test_out_of_range_rates_and_malformed_filters_are_a_422_naming_the_field(
    api, make_rubric, body, loc
):
    rubric = make_rubric()

    for answer in (
        api.patch(f"/rubrics/{rubric.slug}", body),
        api.post("/rubrics", {"name": "Other", **body}),
    ):
        locs = field_locs(answer)
        assert any(".".join(str(p) for p in found[2:]).startswith(loc) for found in locs), locs
    rubric.refresh_from_db()
    assert rubric.sample_rate == 100 and rubric.sample_filters == {}


def test_the_rubric_api_sets_and_shows_the_sampling_settings(api, make_rubric):
    rubric = make_rubric()
    filters = {"agents": ["bot-a"], "metadata_contains": {"tags": "vip"}}

    patched = api.patch(f"/rubrics/{rubric.slug}", {"sample_rate": 12.5, "sample_filters": filters})

    assert patched.status_code == 200, patched.content
    shown = api.get(f"/rubrics/{rubric.slug}").json()
    assert (shown["sample_rate"], shown["sample_filters"]) == (12.5, filters)
    cleared = api.patch(f"/rubrics/{rubric.slug}", {"sample_filters": None}).json()
    assert cleared["sample_filters"] == {} and cleared["sample_rate"] == 12.5


def test_the_editor_saves_the_sampling_filters_as_lines_and_names_a_bad_line(owner, make_rubric):
    rubric = make_rubric()
    client = signed_in(owner)
    form = {
        "name": rubric.name, "scale": "1", "strategy": "batched", "alignment_mode": "off",
        "sample_rate": "25", "sample_agents": "bot-a\n\n bot-b ",
        "sample_metadata_equals": 'env=prod\ntier=3\ncode="7"\nbeta=true',
        "sample_metadata_contains": "tags=vip", "sample_context_has": "user_id",
    }  # fmt: skip

    saved = client.post(f"/rubrics/{rubric.pk}/settings/", form)
    refused = client.post(
        f"/rubrics/{rubric.pk}/settings/", form | {"sample_metadata_equals": "env=prod\noops"}
    )
    out_of_range = client.post(f"/rubrics/{rubric.pk}/settings/", form | {"sample_rate": "150"})

    assert saved.status_code == 302
    text = refused.content.decode()
    assert refused.status_code == 200 and "line 2 is not key=value" in text
    assert "bot-a" in text and "tags=vip" in text  # what was typed is kept
    assert out_of_range.status_code == 200 and "between 0 and 100" in out_of_range.content.decode()
    rubric.refresh_from_db()
    assert rubric.sample_rate == 25
    assert rubric.sample_filters == {
        "agents": ["bot-a", "bot-b"],
        "metadata_equals": {"env": "prod", "tier": 3, "code": "7", "beta": True},
        "metadata_contains": {"tags": "vip"},
        "context_has": ["user_id"],
    }
    page = client.get(f"/rubrics/{rubric.pk}/").content.decode()
    assert "Sampling rate" in page and "code=&quot;7&quot;" in page and "tier=3" in page


def test_the_runs_page_shows_and_filters_not_sampled_runs_and_the_run_page_says_why(
    owner, make_rubric, make_run
):
    rubric = make_rubric(sample_rate=0)
    run = make_run(rubric=rubric.slug, agent="bot-<b>")
    client = signed_in(owner)

    listed = client.get("/runs/", {"status": "not_sampled"}).content.decode()
    detail = client.get(f"/runs/{run.pk}/").content.decode()

    assert str(run.pk) in listed and "Not sampled" in listed
    assert "bot-&lt;b&gt;" in listed and "bot-<b>" not in listed
    assert "left out by the rubric" in detail and "rate 0.0 %" in detail


def test_a_rescore_naming_an_empty_rubric_is_a_422_on_rubric_not_a_500(api):
    answer = api.post("/rescore", {"rubric": "", "status": "failed", "failed_only": True})

    assert ["body", "body", "rubric"] in field_locs(answer)
