"""Nothing OTLP ingest cannot use is dropped in silence: the export's answer says what was
rejected and why (OTLP partialSuccess), and the team sees its newest rejections (API, page)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from runs.api_otel import RejectionKindChoice
from runs.models import AgentRun, OtelRejection, OtelSpan
from runs.otel.models import RejectionKind
from runs.otel.rejections import Rejection, otel_rejections_record
from runs.otel.services import otel_sweep
from runs.tasks import otel_assemble
from tests.otel.otlp import S, new_trace_id, two_tool_trace


def partial(response) -> tuple[int, str] | None:
    """(rejectedSpans, errorMessage) of a JSON or protobuf answer; None when it has none."""
    assert response.status_code == 200, response.content
    if response["Content-Type"] == "application/x-protobuf":
        answer = ExportTraceServiceResponse.FromString(response.content)
        if not answer.HasField("partial_success"):
            return None
        return answer.partial_success.rejected_spans, answer.partial_success.error_message
    body = response.json()
    if "partialSuccess" not in body:
        assert body == {}
        return None
    return int(body["partialSuccess"]["rejectedSpans"]), body["partialSuccess"]["errorMessage"]


def contentless_trace() -> list[S]:
    """An agent span and a child with no GenAI messages (content capture off)."""
    t = new_trace_id()
    agent = S("invoke_agent bot", t, end=20, attributes={"gen_ai.operation.name": "invoke_agent"})
    chat = S("chat gpt-4o", t, parent=agent.span_id, start=1, attributes={
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"})  # fmt: skip
    return [chat, agent]


@pytest.mark.parametrize("encoding", ["json", "protobuf"])
def test_an_agent_span_with_nothing_to_judge_makes_no_run_and_is_rejected_saying_why(
    send, team, encoding
):
    spans = contentless_trace()
    rejected, message = partial(send(spans, encoding))

    assert rejected == 2
    trace_id, agent_id = spans[1].trace_id, spans[1].span_id
    assert f"trace {trace_id} span {agent_id}" in message
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in message
    assert "docs/otel.md" in message
    assert not AgentRun.objects.exists()
    [row] = OtelRejection.objects.filter(team=team)
    assert (row.kind, row.trace_id, row.span_id, row.spans) == ("no_content", trace_id, agent_id, 2)


def test_with_a_delay_a_root_with_nothing_to_judge_is_rejected_in_the_request_itself(
    send, team, settings
):
    settings.EVALSITE_OTEL_ASSEMBLE_DELAY = 30
    spans = contentless_trace()
    send(spans[:1])  # the child first: nothing to say yet

    rejected, message = partial(send(spans[1:], "protobuf"))

    assert rejected == 1  # this export's span; the staged child is counted in the record
    assert "no input and no output messages" in message
    assert OtelRejection.objects.get(team=team).spans == 2
    assert not OtelSpan.objects.filter(assembled_at__isnull=True).exists()  # no task needed
    assert otel_assemble(str(team.pk), [spans[1].trace_id]) == 0
    assert OtelRejection.objects.count() == 1 and not AgentRun.objects.exists()


@pytest.mark.parametrize("encoding", ["json", "protobuf"])
def test_an_unknown_rubric_stores_the_run_and_warns_with_nothing_rejected(send, team, encoding):
    trace = two_tool_trace(rubric="no-such-rubric")

    rejected, message = partial(send(list(trace.values()), encoding))

    assert rejected == 0
    assert "no rubric 'no-such-rubric' in this team" in message and "stored unjudged" in message
    assert trace["agent"].span_id in message
    assert AgentRun.objects.filter(team=team).count() == 1
    assert OtelRejection.objects.get(team=team).kind == "rubric"


def test_with_a_delay_an_archived_rubric_is_warned_of_at_once_and_recorded_by_the_task(
    send, team, settings, make_rubric
):
    settings.EVALSITE_OTEL_ASSEMBLE_DELAY = 30
    rubric = make_rubric()
    rubric.archived_at = timezone.now()
    rubric.save(update_fields=["archived_at"])
    trace = two_tool_trace(rubric=rubric.slug)

    rejected, message = partial(send(list(trace.values())))

    assert rejected == 0 and f"rubric '{rubric.slug}' is archived" in message
    assert not OtelRejection.objects.exists()  # the task records what it finds
    assert otel_assemble(str(team.pk), [trace["agent"].trace_id]) == 1
    assert OtelRejection.objects.get(team=team).kind == "rubric"


def test_a_span_under_a_root_assembled_without_a_run_is_rejected_not_lost(send, team):
    t = new_trace_id()
    root = S("POST /chat", t, end=200)
    trace = two_tool_trace(t)
    trace["agent"].parent = root.span_id
    send([*trace.values(), root])
    assert AgentRun.objects.filter(team=team).count() == 1

    sibling = S("GET /health", t, parent=root.span_id, start=150)
    rejected, message = partial(send([sibling]))

    assert rejected == 1
    assert f"span {sibling.span_id}" in message and f"span {root.span_id} above it" in message
    assert OtelRejection.objects.get(team=team).kind == "no_run"


def test_spans_that_expire_without_joining_a_run_are_recorded_before_they_go(send, team, settings):
    settings.EVALSITE_OTEL_SPAN_TTL_HOURS = 1
    orphan = S("tool", new_trace_id(), parent="00f067aa0ba902b7")  # its agent never comes
    send([orphan])

    assert otel_sweep(now=timezone.now() + timedelta(hours=2)) == (0, 1)

    [row] = OtelRejection.objects.filter(team=team)
    assert (row.kind, row.trace_id, row.spans) == ("expired", orphan.trace_id, 1)
    assert "EVALSITE_OTEL_SPAN_TTL_HOURS=1" in row.reason


def record(team, n: int, reason: str = "why") -> None:
    for i in range(n):
        otel_rejections_record(
            team=team, rejections=[Rejection("late", f"{i:032x}", f"{i:016x}", 1, f"{reason} {i}")]
        )


def test_the_api_lists_the_teams_newest_rejections_first_with_a_page_size_cap(
    team, other_team, api, other_api, session_api, viewer, settings
):
    record(team, 3)
    settings.EVALSITE_PAGE_SIZE_MAX = 2

    answer = api.get("/otel/rejections?limit=10")

    assert answer.status_code == 200
    items = answer.json()["items"]
    assert [i["reason"] for i in items] == ["why 2", "why 1"]
    assert set(items[0]) == {"id", "created_at", "kind", "trace_id", "span_id", "spans", "reason"}
    assert items[0]["kind"] == "late" and items[0]["spans"] == 1
    assert other_api.get("/otel/rejections").json() == {"items": []}
    assert len(session_api(viewer).get("/otel/rejections").json()["items"]) == 2


def test_only_the_newest_rejections_of_each_team_are_kept(team, other_team, settings):
    settings.EVALSITE_OTEL_REJECTIONS_KEPT = 3
    record(other_team, 2)
    record(team, 5)

    kept = OtelRejection.objects.filter(team=team).order_by("created_at", "id")
    assert [r.reason for r in kept] == ["why 2", "why 3", "why 4"]
    assert OtelRejection.objects.filter(team=other_team).count() == 2


def test_the_settings_page_shows_the_teams_rejections_escaped_to_everyone_in_it(
    send, viewer, stranger
):
    send(list(two_tool_trace(rubric="<b>gone</b>").values()))
    client = Client()
    client.force_login(viewer)

    page = client.get("/team/otel/").content.decode()

    assert "Recent rejections" in page and "Rubric not usable" in page
    assert "no rubric &#x27;&lt;b&gt;gone&lt;/b&gt;&#x27; in this team" in page
    assert "<b>gone</b>" not in page
    client.force_login(stranger)
    elsewhere = client.get("/team/otel/").content.decode()
    assert "gone" not in elsewhere and "Nothing rejected" in elsewhere


def test_the_api_schema_names_every_rejection_kind():
    assert list(RejectionKindChoice.__args__) == list(RejectionKind.values)
