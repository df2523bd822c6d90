"""POST /api/score is told when its evaluations end (PostgreSQL NOTIFY, Redis pub/sub; polling on
the embedded stack), and can judge in the web process ("inline") without ever storing two
results while a real worker races it."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from typing import Any

import psycopg
import pytest
import redis
from django.conf import settings as django_settings
from django.db import connection, transaction

from evalsite.notify import (
    PG_PREFIX,
    REDIS_PREFIX,
    _pg_conninfo,
    evaluations_ended,
    notify_mode,
)
from judging.liveness import worker_missing_for
from judging.services.execute import evaluation_execute
from judging.services.score import score_submit, wait_for_evaluations
from runs.models import AgentRun, CriterionVerdict, Evaluation
from runs.payloads import RunPayload
from runs.services.evaluations import evaluation_publish_later
from tests.api_client import Api
from tests.conftest import run_payload, wait_for

CRITERIA = [
    {"description": 'Mentions "refund"'},
    {"description": 'Gives the "order number"'},
    {"description": 'Says "thanks"', "required": False},
]
ON_POSTGRES = django_settings.DATABASES["default"]["ENGINE"].endswith("postgresql")
ON_REDIS = django_settings.CELERY_BROKER_URL.startswith("redis")
pytestmark = pytest.mark.django_db(transaction=True)


def queued_evaluation(team) -> Evaluation:
    submitted = score_submit(
        team=team, payload=RunPayload.model_validate(run_payload()), criteria=CRITERIA
    )
    return submitted.evaluations[0]


class Waiter(threading.Thread):
    """wait_for_evaluations in a thread of its own (its own database connection)."""

    def __init__(self, ids: list[Any], timeout: float = 60) -> None:
        super().__init__(daemon=True)
        self.ids, self.timeout, self.result = ids, timeout, None

    def run(self) -> None:
        try:
            self.result = wait_for_evaluations(self.ids, timeout=self.timeout)
        finally:
            connection.close()


def subscribed(evaluation_id: Any) -> bool:
    """Whether someone listens for this evaluation's end on the channel in use."""
    mode = notify_mode()
    if mode == "postgres":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE query LIKE %s",
                [f"%LISTEN%{PG_PREFIX}{uuid.UUID(str(evaluation_id)).hex}%"],
            )
            return cursor.fetchone()[0] > 0
    if mode == "redis":
        client = redis.Redis.from_url(django_settings.CELERY_BROKER_URL)
        return client.pubsub_numsub(f"{REDIS_PREFIX}{evaluation_id}")[0][1] > 0
    return True  # polling: nothing to subscribe to


@pytest.fixture(params=["postgres", "redis"] if ON_POSTGRES and ON_REDIS else ["auto"])
def channel(request, settings) -> str:
    """Each channel this stack can run: both on PostgreSQL + Redis, else the default."""
    settings.EVALSITE_NOTIFY = request.param
    return notify_mode()


def test_the_channel_follows_the_stack():
    expected = "postgres" if ON_POSTGRES else ("redis" if ON_REDIS else "poll")
    assert notify_mode() == expected


def test_a_waiter_that_subscribed_before_the_write_is_woken(channel, team, fake_judge):
    evaluation = queued_evaluation(team)
    waiter = Waiter([evaluation.id])
    waiter.start()
    wait_for(lambda: subscribed(evaluation.id), message="the waiter to subscribe")

    assert evaluation_execute(evaluation_id=str(evaluation.id)).status == "succeeded"
    waiter.join(60)

    assert waiter.result is True
    evaluation.refresh_from_db()
    assert evaluation.status == "succeeded" and evaluation.passed is True


def test_a_waiter_that_comes_after_the_write_returns_at_once(channel, team, fake_judge):
    evaluation = queued_evaluation(team)
    evaluation_execute(evaluation_id=str(evaluation.id))

    # Nothing will be sent again: only its first look at the database can end this wait.
    assert wait_for_evaluations([evaluation.id], timeout=60) is True


def test_a_wait_for_an_evaluation_nobody_judges_ends_false_at_its_timeout(channel, team):
    evaluation = queued_evaluation(team)

    assert wait_for_evaluations([evaluation.id], timeout=0.3) is False


@pytest.mark.skipif(not ON_POSTGRES, reason="NOTIFY needs PostgreSQL")
def test_postgres_delivers_the_notification_at_commit_not_before(settings, team):
    settings.EVALSITE_NOTIFY = "postgres"
    evaluation = queued_evaluation(team)
    with psycopg.connect(_pg_conninfo(), autocommit=True) as listener:
        listener.execute(f"LISTEN {PG_PREFIX}{evaluation.id.hex}")
        with transaction.atomic():
            evaluations_ended([evaluation.id])
            early = [n.payload for n in listener.notifies(timeout=0.5, stop_after=1)]
        after = [n.payload for n in listener.notifies(timeout=30, stop_after=1)]

    assert early == [] and after == [str(evaluation.id)]


def next_message(pubsub, timeout: float) -> Any:
    """The next published message (subscription confirmations skipped), None after timeout."""
    deadline = time.monotonic() + timeout
    while (remaining := deadline - time.monotonic()) > 0:
        message = pubsub.get_message(timeout=remaining)
        if message and message["type"] == "message":
            return message["data"].decode()
    return None


@pytest.mark.skipif(not ON_REDIS, reason="needs the Redis broker")
def test_redis_publishes_after_commit_and_never_for_a_rolled_back_write(settings, team):
    settings.EVALSITE_NOTIFY = "redis"
    kept, dropped = queued_evaluation(team), queued_evaluation(team)
    pubsub = redis.Redis.from_url(settings.CELERY_BROKER_URL).pubsub()
    pubsub.subscribe(f"{REDIS_PREFIX}{kept.id}", f"{REDIS_PREFIX}{dropped.id}")
    try:
        with pytest.raises(RuntimeError), transaction.atomic():
            evaluations_ended([dropped.id])
            raise RuntimeError("roll back")
        with transaction.atomic():
            evaluations_ended([kept.id])
            early = next_message(pubsub, 0.5)
        after = next_message(pubsub, 30)
        rest = next_message(pubsub, 0.5)
    finally:
        pubsub.close()

    assert (early, after, rest) == (None, str(kept.id), None)


UNREACHABLE = ["redis://127.0.0.1:1/0"] + (
    ["postgres://postgres@127.0.0.1:1/nowhere"] if ON_POSTGRES else []
)


@pytest.mark.parametrize("url", UNREACHABLE)
def test_an_unreachable_channel_falls_back_to_polling(settings, team, fake_judge, url, caplog):
    settings.EVALSITE_NOTIFY = "postgres" if url.startswith("postgres") else "redis"
    settings.EVALSITE_NOTIFY_URL = url
    first, second = queued_evaluation(team), queued_evaluation(team)
    waiters = [Waiter([first.id]), Waiter([second.id])]
    with caplog.at_level(logging.WARNING, logger="evalsite.notify"):
        for waiter in waiters:
            waiter.start()
        evaluation_execute(evaluation_id=str(first.id))
        evaluation_execute(evaluation_id=str(second.id))
        for waiter in waiters:
            waiter.join(60)

    assert [w.result for w in waiters] == [True, True]
    down = [r for r in caplog.records if "unreachable" in r.getMessage()]
    assert len(down) <= 1  # logged once per outage, not once per call


# --- POST /api/score ---------------------------------------------------------------------------


@pytest.mark.worker
def test_score_answers_when_the_worker_is_done_on_each_channel(
    channel, start_worker, fake_judge, api_key
):
    worker = start_worker(EVALSITE_NOTIFY=django_settings.EVALSITE_NOTIFY)
    response = Api(api_key).post("/score", run_payload(criteria=CRITERIA, timeout=60))

    assert response.status_code == 200, (response.content, worker.log.read_text()[-3000:])
    assert response.json()["status"] == "succeeded" and response.json()["passed"] is True


def test_inline_scoring_judges_in_the_web_process_with_no_worker(fake_judge, api_key):
    response = Api(api_key).post("/score", run_payload(criteria=CRITERIA, timeout=60, inline=True))

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["status"], body["passed"]) == ("succeeded", True)
    assert CriterionVerdict.objects.filter(evaluation_id=body["evaluation_id"]).count() == 3


def test_an_inline_score_call_over_the_judge_budget_is_answered_202_once_parked(
    fake_judge, team, api_key
):
    from judging.services.budget import budget_update

    budget_update(team=team, daily_tokens=0)
    payload = run_payload(criteria=CRITERIA, timeout=60, inline=True)

    response = Api(api_key).post("/score", payload)

    assert response.status_code == 202, response.content
    body = response.json()
    assert (body["status"], body["passed"], body["error"]) == ("over_budget", None, "")
    assert "judge budget is reached" in body["detail"]
    assert AgentRun.objects.get(pk=body["run_id"]).status == "over_budget"
    assert fake_judge.stats()["completions"] == 0


def test_with_no_worker_seen_for_long_the_web_process_judges_unasked(settings, fake_judge, api_key):
    settings.EVALSITE_SCORE_INLINE_WHEN_NO_WORKER = 0.001  # no worker runs in this test
    response = Api(api_key).post("/score", run_payload(criteria=CRITERIA, timeout=60))

    assert response.status_code == 200, response.content
    assert response.json()["status"] == "succeeded"


def test_without_inline_or_a_worker_the_call_answers_202(settings, fake_judge, api_key):
    settings.EVALSITE_SCORE_INLINE_WHEN_NO_WORKER = 0
    response = Api(api_key).post("/score", run_payload(criteria=CRITERIA, timeout=0.5))

    assert response.status_code == 202, response.content
    assert response.json()["status"] == "queued"


def test_inline_answers_202_when_time_runs_out_and_stores_the_result_later(fake_judge, api_key):
    payload = run_payload(
        output="Your refund for order number 1234, thanks. [[latency:5]]",
        criteria=CRITERIA,
        timeout=0.5,
        inline=True,
    )
    response = Api(api_key).post("/score", payload)

    assert response.status_code == 202, response.content
    assert response.json()["status"] in ("queued", "running")
    evaluation_id = response.json()["evaluation_id"]
    final = wait_for(
        lambda: Evaluation.objects.filter(pk=evaluation_id, status="succeeded").first(),
        timeout=60,
        message="the inline judging to finish after the 202",
    )
    assert final.attempts == 1
    assert CriterionVerdict.objects.filter(evaluation=final).count() == 3


def assert_judged_once(body: dict[str, Any]) -> None:
    """Claimed once (attempts), written once: one rubric verdict per criterion, one alignment
    breakdown (one perspective)."""
    run = AgentRun.objects.get(pk=body["run_id"])
    evaluations = list(run.evaluations.all())
    assert sorted(e.kind for e in evaluations) == ["alignment", "rubric"]
    assert [e.attempts for e in evaluations] == [1, 1]
    assert CriterionVerdict.objects.filter(run=run).count() == 3
    alignment = next(e for e in evaluations if e.kind == "alignment")
    assert alignment.alignment.count() == 1


def test_inline_scoring_of_a_new_run_stores_it_claimed_and_sends_nothing_to_the_broker(
    fake_judge, api_key
):
    response = Api(api_key).post(
        "/score", run_payload(criteria=CRITERIA, alignment="user", timeout=60, inline=True)
    )

    assert response.status_code == 200, response.content
    assert_judged_once(response.json())
    # Never published: no worker could have had a message for these evaluations.
    assert not Evaluation.objects.filter(enqueued_at__isnull=False).exists()


def test_an_inline_answer_is_what_was_stored(fake_judge, api_key):
    """The inline call answers from the rows it wrote; asked again (same external_id), the
    answer is read back from the database: both are the same, field for field, but for
    ``stored`` (the second is the first call's result)."""
    api = Api(api_key)
    payload = run_payload(
        external_id="inline-answer", criteria=CRITERIA, alignment="both", timeout=60, inline=True
    )
    judged = api.post("/score", payload)
    again = api.post("/score", payload)

    assert judged.status_code == again.status_code == 200, (judged.content, again.content)
    assert judged.json()["alignment"]["user"] and judged.json()["alignment"]["system"]
    assert len(judged.json()["verdicts"]) == 3
    first, second = judged.json(), again.json()
    assert (first.pop("stored"), second.pop("stored")) == (False, True)
    assert first == second


@pytest.mark.worker
def test_a_worker_sent_an_evaluation_the_web_process_is_judging_skips_it(worker, api_key):
    """A message for an inline evaluation reaching a worker mid-judging (a sweeper's resend, a
    duplicate) claims nothing: the worker skips it and the result is written once."""
    payload = run_payload(
        output="Your refund for order number 1234, thanks. [[latency:2]]",
        criteria=CRITERIA,
        alignment="user",
        timeout=60,
        inline=True,
    )
    answer: dict[str, Any] = {}
    call = threading.Thread(target=lambda: answer.update(r=Api(api_key).post("/score", payload)))
    call.start()
    judging = wait_for(
        lambda: list(Evaluation.objects.filter(status="running")) or None,
        message="the inline evaluations to be judging",
    )
    for evaluation in judging:
        evaluation_publish_later(str(evaluation.id), countdown=0)
    call.join(timeout=90)

    assert answer["r"].status_code == 200, answer["r"].content
    assert_judged_once(answer["r"].json())


@pytest.mark.worker
def test_inline_scoring_of_a_stored_run_racing_a_worker_stores_one_result_per_evaluation(
    worker, api_key, make_rubric
):
    """The same run sent with POST /api/runs (queued, sent to the worker) and then scored
    inline: the web process and the worker race to claim each evaluation."""
    rubric = make_rubric(name="Race", criteria=[c | {"required": True} for c in CRITERIA[:2]])
    api = Api(api_key)
    bodies = []
    for i in range(8):
        payload = run_payload(rubric=rubric.slug, alignment="user", external_id=f"race-{i}")
        assert api.post("/runs", payload).status_code == 201
        response = api.post("/score", payload | {"timeout": 60, "inline": True})
        assert response.status_code == 200, response.content
        bodies.append(response.json())

    assert [b["status"] for b in bodies] == ["succeeded"] * 8
    for body in bodies:
        run = AgentRun.objects.get(pk=body["run_id"])
        evaluations = list(run.evaluations.all())
        assert sorted(e.kind for e in evaluations) == ["alignment", "rubric"]
        assert [e.attempts for e in evaluations] == [1, 1]
        assert CriterionVerdict.objects.filter(run=run).count() == 2
        assert next(e for e in evaluations if e.kind == "alignment").alignment.count() == 1


@pytest.mark.worker
def test_a_running_worker_is_seen_by_its_heartbeat(worker):
    assert wait_for(lambda: not worker_missing_for(60), message="the worker's first heartbeat")
