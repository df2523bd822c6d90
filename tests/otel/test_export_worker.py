"""The whole path through a real Celery worker and broker: a run pushed over the API is judged
by the worker, whose write owes its verdicts to the team's endpoint; the drain task the write
asks for sends them, a 500 is retried with backoff, and the receiver gets every event."""

from __future__ import annotations

import pytest

from runs.models import Evaluation, OtelExportItem, Status
from tests.conftest import FAKE_MODEL, run_payload, wait_for
from tests.http_listener import Listener
from tests.otel.receiver import events

pytestmark = pytest.mark.worker


def test_a_judged_run_reaches_the_teams_otlp_endpoint_through_the_worker(
    start_worker, transactional_db, fake_judge, api, make_rubric, settings
):
    listener = Listener().start()
    listener.script.append((500, {}, b""))
    try:
        start_worker(
            concurrency=2,
            EVALSITE_JUDGE_MODEL=FAKE_MODEL,
            EVALSITE_JUDGE_API_BASE=fake_judge.url,
            EVALSITE_JUDGE_API_KEY="fake-key",
            EVALSITE_WEBHOOK_ALLOW_PRIVATE="1",
            EVALSITE_OTEL_EXPORT_BACKOFF="1",
        )
        saved = api.patch(
            "/team/settings",
            {"otel_export": {"endpoint": f"{listener.url}/v1/logs", "protocol": "http/json"}},
        )
        assert saved.status_code == 200, saved.content
        rubric = make_rubric()
        pushed = api.post("/runs", run_payload(rubric=rubric.slug))
        assert pushed.status_code in (200, 201, 202), pushed.content

        wait_for(
            lambda: len(listener.seen) >= 2 and not OtelExportItem.objects.exists(),
            timeout=60, message="the export retried after its 500 and delivered",
        )  # fmt: skip
    finally:
        listener.stop()
    [evaluation] = Evaluation.objects.filter(status=Status.SUCCEEDED)
    delivered = events(listener.seen[1:])
    assert len(delivered) == 4
    assert {e.attributes["evalsite.evaluation.id"] for e in delivered} == {str(evaluation.id)}
    assert events(listener.seen[:1]) == delivered  # the failed request carried the same events
    shown = api.get("/team/settings").json()["otel_export"]
    assert shown["last_error"] == "HTTP 500 Internal Server Error"
    assert shown["sent_events"] == 4 and shown["pending"] == 0
