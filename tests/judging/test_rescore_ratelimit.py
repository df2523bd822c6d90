"""The per-judge-model rate limiter: bucket arithmetic, both shared stores, and the worker's use."""

from __future__ import annotations

import uuid

import pytest
from django.utils import timezone

from evalsite.ratelimit import (
    Draw,
    Limit,
    RedisBackend,
    SQLiteBackend,
    _draws,
    judge_acquire,
    limit_for,
)
from judging.services.execute import evaluation_execute
from runs.models import Evaluation, Status


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(tmp_path, clock) -> SQLiteBackend:
    return SQLiteBackend(tmp_path / "ratelimit.sqlite3", clock=clock)


def per_minute(rpm: int = 0, tpm: int = 0, tokens: int = 0) -> list[Draw]:
    return _draws("openai/test", Limit(rpm=rpm, tpm=tpm), requests=1, tokens=tokens)


def test_requests_beyond_the_per_minute_limit_wait_for_the_bucket_to_refill(store, clock):
    assert store.take(per_minute(rpm=2)) == 0
    assert store.take(per_minute(rpm=2)) == 0

    assert store.take(per_minute(rpm=2)) == pytest.approx(30.0)  # one request per 30 s
    clock.now += 30
    assert store.take(per_minute(rpm=2)) == 0


def test_a_refused_call_takes_nothing_from_either_bucket(store, clock):
    assert store.take(per_minute(rpm=10, tpm=1000, tokens=600)) == 0

    wait = store.take(per_minute(rpm=10, tpm=1000, tokens=600))
    assert wait == pytest.approx(200 / (1000 / 60))  # 200 tokens short at 16.7 tokens/s
    assert store.take(per_minute(rpm=10, tpm=1000, tokens=600)) == pytest.approx(wait)
    assert store.take(per_minute(rpm=10, tpm=1000, tokens=400)) == 0  # requests were not spent


def test_a_call_bigger_than_a_minute_of_tokens_is_admitted_once_the_bucket_is_full(store, clock):
    assert store.take(per_minute(tpm=100, tokens=5000)) == 0
    assert store.take(per_minute(tpm=100, tokens=5000)) == pytest.approx(60.0)


def test_processes_sharing_the_file_share_the_limit(tmp_path, clock):
    first = SQLiteBackend(tmp_path / "shared.sqlite3", clock=clock)
    second = SQLiteBackend(tmp_path / "shared.sqlite3", clock=clock)

    assert first.take(per_minute(rpm=1)) == 0
    assert second.take(per_minute(rpm=1)) == pytest.approx(60.0)


def test_limits_come_from_the_per_model_setting_else_the_defaults(settings):
    settings.EVALSITE_JUDGE_RATE_LIMITS = '{"openai/gpt-4o": {"rpm": 500, "tpm": 30000}}'
    settings.EVALSITE_JUDGE_RPM = 60
    settings.EVALSITE_JUDGE_TPM = 0

    assert limit_for("openai/gpt-4o") == Limit(rpm=500, tpm=30000)
    assert limit_for("anything/else") == Limit(rpm=60, tpm=0)


def test_no_configured_limit_admits_everything(settings):
    settings.EVALSITE_JUDGE_RATE_LIMITS = ""
    settings.EVALSITE_JUDGE_RPM = settings.EVALSITE_JUDGE_TPM = 0

    assert all(judge_acquire(model="openai/x", tokens=10**9) == 0 for _ in range(100))


def test_redis_holds_one_bucket_for_every_worker(settings):
    url = settings.CELERY_BROKER_URL
    if not url.startswith("redis"):
        pytest.skip("the Redis store is used when the broker is Redis")
    model = f"openai/test-{uuid.uuid4().hex}"
    draws = _draws(model, Limit(rpm=2), requests=1, tokens=0)
    first, second = RedisBackend(url), RedisBackend(url)

    assert first.take(draws) == 0
    assert second.take(draws) == 0
    assert 25 < first.take(draws) <= 30


def test_an_evaluation_over_the_limit_is_deferred_without_spending_an_attempt(
    db, fake_judge, make_rubric, make_run, settings, tmp_path
):
    model = f"openai/limited-{uuid.uuid4().hex[:8]}"  # a bucket of its own
    settings.EVALSITE_JUDGE_RATE_LIMITS = {model: {"rpm": 1}}
    settings.EVALSITE_RATE_MAX_WAIT = 0
    settings.EVALSITE_RATELIMIT_URL = ""
    settings.DATA_DIR = tmp_path
    settings.CELERY_BROKER_URL = "filesystem://"  # the file store, whatever the suite's broker
    rubric = make_rubric(judge_model=model)
    first, second = (make_run(rubric=rubric.slug, output=f"Refund {i}") for i in range(2))
    [e1], [e2] = (list(Evaluation.objects.filter(run=r)) for r in (first, second))

    assert evaluation_execute(evaluation_id=str(e1.pk)).status == "succeeded"
    outcome = evaluation_execute(evaluation_id=str(e2.pk))

    e2.refresh_from_db()
    assert outcome.status == "deferred" and outcome.retry_in == pytest.approx(60, abs=1)
    assert e2.status == Status.QUEUED and e2.attempts == 0
    assert e2.not_before > timezone.now()
    assert fake_judge.stats()["completions"] == 1
