"""Verdicts exported to a team's own tracing: received by a real HTTP listener and decoded with
opentelemetry-proto's own ExportLogsServiceRequest, from protobuf and from OTLP/JSON."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from judging.services.execute import evaluation_execute
from runs.models import Evaluation, OtelExportItem, Status
from runs.otel.export import otel_exports_drain
from teams.models import OtelExport
from tests.conftest import FAKE_MODEL
from tests.http_listener import Listener
from tests.otel.otlp import two_tool_trace
from tests.otel.receiver import events

pytestmark = pytest.mark.django_db

MISSES_THANKS = "Your refund for order number 1234 was sent today."


@pytest.fixture
def receiver():
    listener = Listener().start()
    yield listener
    listener.stop()


def export_to(api, receiver, protocol="http/protobuf", headers=None):
    body = {"endpoint": f"{receiver.url}/v1/logs", "protocol": protocol}
    if headers is not None:
        body["headers"] = headers
    response = api.patch("/team/settings", {"otel_export": body})
    assert response.status_code == 200, response.content
    return response.json()["otel_export"]


def judge_all(run) -> list[Evaluation]:
    for evaluation in Evaluation.objects.filter(run=run, status=Status.QUEUED):
        assert evaluation_execute(evaluation_id=str(evaluation.id)).status == "succeeded"
    return list(Evaluation.objects.filter(run=run).order_by("kind"))


@pytest.mark.parametrize("protocol", ["http/protobuf", "http/json"])
def test_each_criterion_the_rubric_and_alignment_arrive_as_evaluation_result_events(
    api, receiver, fake_judge, make_rubric, make_run, protocol
):
    export_to(api, receiver, protocol, headers={"X-Api-Key": "receiver-key-1"})
    rubric = make_rubric(alignment_mode="user")
    run = make_run(rubric=rubric.slug, output=MISSES_THANKS)
    alignment, scored = judge_all(run)

    report = otel_exports_drain()

    assert report.sent_events == 5 and len(receiver.seen) == 1
    request = receiver.seen[0]
    assert request.path == "/v1/logs" and request.headers["x-api-key"] == "receiver-key-1"
    got = events(receiver.seen)
    assert {e.name for e in got} == {"gen_ai.evaluation.result"}
    assert {e.scope for e in got} == {"evalsite.verdicts"}
    assert got[0].resource == {"service.name": "evalsite", "telemetry.sdk.language": "python"}
    by_result = {}
    for e in got:
        by_result.setdefault(e.attributes["evalsite.result"], []).append(e.attributes)
    criteria = sorted(by_result["criterion"], key=lambda a: a["evalsite.criterion.position"])
    verdicts = list(scored.verdicts.order_by("position"))
    assert [
        (
            a["gen_ai.evaluation.name"], a["gen_ai.evaluation.score.value"],
            a["gen_ai.evaluation.score.label"], a["gen_ai.evaluation.explanation"],
            a["evalsite.criterion.key"], a["evalsite.criterion.required"],
        )
        for a in criteria
    ] == [
        (v.description, 1.0 if v.satisfied else 0.0, "pass" if v.satisfied else "fail",
         v.reasoning, v.criterion_key, v.required)
        for v in verdicts
    ]  # fmt: skip
    assert [a["gen_ai.evaluation.score.label"] for a in criteria] == ["pass", "pass", "fail"]
    for a in [*criteria, *by_result["rubric"], *by_result["alignment"]]:
        assert a["gen_ai.request.model"] == FAKE_MODEL
        assert a["evalsite.rubric.id"] == str(rubric.id)
        assert a["evalsite.run.id"] == str(run.id)
    for a in [*criteria, *by_result["rubric"]]:  # alignment judges no rubric version
        assert a["evalsite.rubric.version"] == 1
    [rubric_event] = by_result["rubric"]
    assert rubric_event["gen_ai.evaluation.name"] == rubric.name
    assert rubric_event["gen_ai.evaluation.score.value"] == pytest.approx(scored.score)
    assert rubric_event["gen_ai.evaluation.score.label"] == "pass"  # the failed one is optional
    assert rubric_event["evalsite.evaluation.id"] == str(scored.id)
    [aligned] = by_result["alignment"]
    assert aligned["gen_ai.evaluation.name"] == "prompt_alignment"
    assert aligned["gen_ai.evaluation.score.value"] == pytest.approx(alignment.score)
    assert aligned["gen_ai.evaluation.score.label"] == alignment.band
    assert aligned["evalsite.evaluation.id"] == str(alignment.id)
    assert {e.trace_id for e in got} == {""}  # an API run: no trace to link to
    assert OtelExportItem.objects.count() == 0


@pytest.mark.parametrize("protocol", ["http/protobuf", "http/json"])
def test_events_of_a_run_that_came_over_otlp_are_linked_to_its_agent_span(
    api, receiver, fake_judge, make_rubric, send, protocol
):
    export_to(api, receiver, protocol)
    rubric = make_rubric()
    trace = two_tool_trace(rubric=rubric.slug)
    assert send(list(trace.values())).status_code == 200
    [evaluation] = Evaluation.objects.all()
    judge_all(evaluation.run)

    otel_exports_drain()

    got = events(receiver.seen)
    assert len(got) == 4
    agent = trace["agent"]
    assert {(e.trace_id, e.span_id) for e in got} == {(agent.trace_id, agent.span_id)}


def test_a_failing_endpoint_is_retried_with_backoff_and_the_failure_is_shown(
    api, receiver, fake_judge, make_rubric, make_run, settings
):
    settings.EVALSITE_OTEL_EXPORT_BACKOFF = 30
    export_to(api, receiver)
    receiver.script.append((500, {}, b"collector restarting: internal detail"))
    judge_all(make_run(rubric=make_rubric().slug))

    first = otel_exports_drain()

    assert first.failed_requests == 1 and first.sent_events == 0
    shown = api.get("/team/settings").json()["otel_export"]
    assert shown["last_error"] == "HTTP 500 Internal Server Error"  # never the receiver's text
    assert shown["pending"] == 1 and shown["last_success_at"] is None
    [row] = OtelExportItem.objects.all()
    assert row.attempts == 1 and row.next_attempt_at > timezone.now() + timedelta(seconds=25)
    assert otel_exports_drain().sent_events == 0  # not due before its backoff
    assert len(receiver.seen) == 1

    again = otel_exports_drain(now=timezone.now() + timedelta(seconds=31))

    assert again.sent_events == 4
    assert len(receiver.seen) == 2
    assert events(receiver.seen[:1]) == events(receiver.seen[1:])  # the same events again
    shown = api.get("/team/settings").json()["otel_export"]
    assert shown["pending"] == 0 and shown["last_success_at"] is not None
    assert shown["sent_events"] == 4 and shown["failed_events"] == 0
    assert shown["last_error"] == "HTTP 500 Internal Server Error" and shown["last_error_at"]


def test_a_refusing_answer_gives_up_at_once_and_counts_the_events_failed(
    api, receiver, fake_judge, make_rubric, make_run
):
    export_to(api, receiver)
    receiver.script.append((400, {}, b""))
    judge_all(make_run(rubric=make_rubric().slug))

    otel_exports_drain()

    shown = api.get("/team/settings").json()["otel_export"]
    assert shown["last_error"] == "HTTP 400 Bad Request"
    assert shown["pending"] == 0 and shown["failed_events"] == 4


def test_an_endpoint_the_guard_now_refuses_is_not_called(
    api, receiver, fake_judge, make_rubric, make_run, settings
):
    export_to(api, receiver)
    judge_all(make_run(rubric=make_rubric().slug))
    settings.EVALSITE_WEBHOOK_ALLOW_PRIVATE = False  # as if its name now pointed inside

    otel_exports_drain()

    assert receiver.seen == []
    shown = api.get("/team/settings").json()["otel_export"]
    assert shown["last_error"].startswith("not sent: the endpoint points to")
    assert shown["failed_events"] == 4


def test_beyond_the_pending_cap_the_oldest_are_dropped_and_counted(
    api, receiver, fake_judge, make_rubric, make_run, settings
):
    settings.EVALSITE_OTEL_EXPORT_MAX_PENDING = 1
    export_to(api, receiver)
    rubric = make_rubric()
    judge_all(make_run(rubric=rubric.slug))
    newest = judge_all(make_run(rubric=rubric.slug))[0]

    report = otel_exports_drain()

    assert report.dropped == 1 and report.sent_events == 4
    assert {e.attributes["evalsite.evaluation.id"] for e in events(receiver.seen)} == {
        str(newest.id)
    }
    shown = api.get("/team/settings").json()["otel_export"]
    assert shown["dropped_evaluations"] == 1
    assert "dropped unsent" in shown["last_error"]


def test_another_teams_verdicts_never_reach_this_teams_endpoint(
    api, other_api, receiver, fake_judge, make_rubric, make_run, other_team
):
    export_to(api, receiver)
    other_rubric = make_rubric(team=other_team)
    judge_all(make_run(team=other_team, rubric=other_rubric.slug))

    assert otel_exports_drain().sent_events == 0
    assert receiver.seen == [] and OtelExportItem.objects.count() == 0
    assert other_api.get("/team/settings").json()["otel_export"] is None


def test_the_deployments_own_otlp_headers_never_reach_a_teams_endpoint(
    api, receiver, fake_judge, make_rubric, make_run, monkeypatch
):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=deployment-secret")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_HEADERS", "x-deploy=deployment-secret")
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.secret=deployment-secret")
    export_to(api, receiver, headers={"Authorization": "Bearer team-token"})
    judge_all(make_run(rubric=make_rubric().slug))

    otel_exports_drain()

    [request] = receiver.seen
    assert request.headers["authorization"] == "Bearer team-token"
    assert "deployment-secret" not in repr(request.headers)
    assert "x-deploy" not in request.headers
    assert {e.resource["service.name"] for e in events(receiver.seen)} == {"evalsite"}
    assert "deployment-secret" not in repr(events(receiver.seen))  # nor the server's resource


def test_removing_the_export_stops_it_and_forgets_what_was_waiting(
    api, receiver, fake_judge, make_rubric, make_run
):
    export_to(api, receiver)
    judge_all(make_run(rubric=make_rubric().slug))

    assert api.patch("/team/settings", {"otel_export": None}).json()["otel_export"] is None

    assert otel_exports_drain().sent_events == 0
    assert receiver.seen == [] and OtelExportItem.objects.count() == 0
    assert OtelExport.objects.count() == 0


def test_rows_a_dead_drain_claimed_are_sent_once_its_lease_runs_out(
    api, receiver, fake_judge, make_rubric, make_run, settings
):
    from runs.otel.export import _claim_next

    export_to(api, receiver)
    judge_all(make_run(rubric=make_rubric().slug))
    now = timezone.now()
    assert _claim_next(now) is not None  # a drain that claimed them, then its worker died

    assert otel_exports_drain(now=now).sent_events == 0  # held by that claim
    lease = settings.EVALSITE_OTEL_EXPORT_TIMEOUT + 60
    later = otel_exports_drain(now=now + timedelta(seconds=lease + 1))

    assert later.sent_events == 4 and len(receiver.seen) == 1
    assert OtelExportItem.objects.count() == 0


def test_a_run_deleted_before_its_export_takes_its_waiting_verdicts_with_it(
    api, receiver, fake_judge, make_rubric, make_run
):
    from reviews.services.retention import run_delete

    export_to(api, receiver)
    run = make_run(rubric=make_rubric().slug)
    judge_all(run)
    assert OtelExportItem.objects.count() == 1

    run_delete(run=run)

    assert OtelExportItem.objects.count() == 0
    assert otel_exports_drain().sent_events == 0 and receiver.seen == []
