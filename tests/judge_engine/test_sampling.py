"""The sampling decision (judge_engine.sampling): deterministic, close to its rate, filters."""

from __future__ import annotations

import uuid

import pytest
from pydantic import ValidationError

from judge_engine.sampling import SampleFilters, sample_bucket, sample_decide

TEAM = uuid.UUID("00000000-0000-4000-8000-000000000001")
RUBRIC = uuid.UUID("00000000-0000-4000-8000-000000000002")
NONE = SampleFilters()


def decide(key: str, rate: float, filters: SampleFilters = NONE, **run) -> bool:
    fields = {"agent": "bot", "metadata": {}, "request_context": {}} | run
    bucket = sample_bucket(TEAM, RUBRIC, key)
    return sample_decide(rate=rate, filters=filters, bucket=bucket, **fields).sampled


@pytest.mark.parametrize("rate", [1.0, 20.0, 50.0, 73.5, 99.0])
def test_over_ten_thousand_runs_the_sampled_share_is_within_three_points_of_the_rate(rate):
    sampled = sum(decide(f"run-{i}", rate) for i in range(10_000))

    assert abs(sampled / 100 - rate) <= 3.0, sampled


def test_content_hashes_as_keys_sample_as_evenly_as_external_ids():
    keys = [uuid.uuid5(RUBRIC, str(i)).hex * 2 for i in range(10_000)]  # 64 hex chars

    assert abs(sum(decide(k, 20.0) for k in keys) / 100 - 20.0) <= 3.0


def test_the_same_run_is_decided_the_same_way_every_time():
    first = [decide(f"run-{i}", 30.0) for i in range(2_000)]
    again = [decide(f"run-{i}", 30.0) for i in range(2_000)]

    assert first == again
    assert 0 < sum(first) < len(first)


def test_the_bucket_depends_on_team_rubric_and_run_key():
    base = sample_bucket(TEAM, RUBRIC, "run-1")

    assert base == sample_bucket(str(TEAM), str(RUBRIC), "run-1")
    assert 0 <= base < 100
    assert len({base, sample_bucket(TEAM, uuid.uuid4(), "run-1"), sample_bucket(uuid.uuid4(), RUBRIC, "run-1"), sample_bucket(TEAM, RUBRIC, "run-2")}) == 4  # fmt: skip


def test_a_raised_rate_keeps_every_run_it_sampled_before():
    at_20 = {i for i in range(5_000) if decide(f"run-{i}", 20.0)}
    at_50 = {i for i in range(5_000) if decide(f"run-{i}", 50.0)}

    assert at_20 < at_50


def test_rate_zero_judges_nothing_and_rate_one_hundred_everything():
    assert not any(decide(f"run-{i}", 0.0) for i in range(1_000))
    assert all(decide(f"run-{i}", 100.0) for i in range(1_000))


def test_each_filter_leaves_out_the_runs_that_do_not_match_and_names_itself():
    filters = SampleFilters(
        agents=["bot-a", "bot-b"],
        metadata_equals={"env": "prod", "beta": False},
        metadata_contains={"tags": "vip", "note": "refund"},
        context_has=["user_id"],
    )
    good = {
        "agent": "bot-b",
        "metadata": {"env": "prod", "beta": False, "tags": ["vip", "eu"], "note": "a refund"},
        "request_context": {"user_id": 7},
    }
    bad = [
        ({"agent": "bot-c"}, "filter: agents"),
        ({"metadata": good["metadata"] | {"env": "dev"}}, "filter: metadata_equals.env"),
        ({"metadata": good["metadata"] | {"beta": 0}}, "filter: metadata_equals.beta"),
        ({"metadata": good["metadata"] | {"tags": ["eu"]}}, "filter: metadata_contains.tags"),
        ({"metadata": good["metadata"] | {"note": None}}, "filter: metadata_contains.note"),
        ({"request_context": {}}, "filter: context_has.user_id"),
    ]
    bucket = sample_bucket(TEAM, RUBRIC, "x")

    assert sample_decide(rate=100, filters=filters, bucket=bucket, **good).sampled
    for change, reason in bad:
        decision = sample_decide(rate=100, filters=filters, bucket=bucket, **(good | change))
        assert (decision.sampled, decision.reason) == (False, reason)


def test_filters_apply_before_the_rate_and_the_decision_records_both():
    decision = sample_decide(
        rate=100, filters=SampleFilters(agents=["a"]), bucket=10.0, agent="b", metadata={},
        request_context={},
    )  # fmt: skip
    assert decision.as_json() == {
        "sampled": False, "rate": 100, "bucket": 10.0, "reason": "filter: agents",
    }  # fmt: skip
    assert (
        sample_decide(
            rate=5, filters=NONE, bucket=10.0, agent="b", metadata={}, request_context={}
        ).reason
        == "rate"
    )


@pytest.mark.parametrize(
    "value",
    [
        {"agent": ["a"]},
        {"agents": "a"},
        {"agents": [1]},
        {"metadata_equals": {"k": [1]}},
        {"metadata_contains": {"k": 3}},
        {"context_has": [None]},
    ],
)
def test_malformed_filters_are_refused(value):
    with pytest.raises(ValidationError):
        SampleFilters.model_validate(value)
